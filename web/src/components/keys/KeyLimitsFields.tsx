import { useId } from 'react';
import { modelList } from '../../lib/model-list';
import type { ApiKey, KeyLimitsInput, KeyScope, SpendPeriod } from '../../api/types';

/** The scopes a key can carry, with what each one lets it do. */
const SCOPES: ReadonlyArray<{ scope: KeyScope; label: string }> = [
  { scope: 'models:use', label: 'Call models (chat, messages, token counts)' },
  { scope: 'usage:read', label: 'Read usage, ledger and account' },
  { scope: 'keys:manage', label: 'Create, change and revoke keys (never beyond its own limits)' },
  { scope: 'account:redeem', label: 'Redeem credit codes' },
];

export type Access = 'full' | 'read_only' | 'custom';

/** The form's state: text as typed, turned into the API's fields by `toLimitsInput`. */
export interface KeyLimitsDraft {
  access: Access;
  scopes: KeyScope[];
  /** Comma-separated model ids or family words; empty: every model. */
  models: string;
  /** Empty: no spend limit. */
  spendUsd: string;
  period: SpendPeriod;
  rpm: string;
  tpm: string;
}

export const EMPTY_LIMITS: KeyLimitsDraft = {
  access: 'full',
  scopes: ['models:use'],
  models: '',
  spendUsd: '',
  period: 'day',
  rpm: '',
  tpm: '',
};

/** The draft of an existing key, for the edit dialog. */
export function draftOf(key: ApiKey): KeyLimitsDraft {
  const full = key.scopes.length === SCOPES.length;
  const readOnly = key.scopes.length === 1 && key.scopes[0] === 'usage:read';
  return {
    access: full ? 'full' : readOnly ? 'read_only' : 'custom',
    scopes: key.scopes,
    models: key.models?.join(', ') ?? '',
    spendUsd: key.spendLimit?.usd ?? '',
    period: key.spendLimit?.period ?? 'day',
    rpm: key.rateLimit?.requestsPerMinute?.toString() ?? '',
    tpm: key.rateLimit?.tokensPerMinute?.toString() ?? '',
  };
}

/**
 * Every field, explicitly: an empty one means "no restriction" (the server validates and names a bad one). Editing
 * (`initial`: the key's draft), an untouched spend limit is left out: the form shows one of the key's limits, and
 * sending it would replace all of them (the Limits page sets several).
 */
export function toLimitsInput(draft: KeyLimitsDraft, initial?: KeyLimitsDraft): KeyLimitsInput {
  const rpm = draft.rpm.trim();
  const tpm = draft.tpm.trim();
  // Thrown into the form's error notice: a number field that is not a whole number is never sent as "no limit".
  for (const [value, label] of [
    [rpm, 'Requests / min'],
    [tpm, 'Tokens / min'],
  ] as const) {
    if (value !== '' && !/^\d+$/.test(value))
      throw new Error(`${label} must be a whole number, or empty for the tier's limit.`);
  }
  const spendUntouched =
    initial !== undefined && draft.spendUsd.trim() === initial.spendUsd && draft.period === initial.period;
  return {
    scopes: draft.access === 'custom' ? draft.scopes : draft.access,
    models: modelList(draft.models),
    ...(spendUntouched
      ? {}
      : { spendLimit: draft.spendUsd.trim() === '' ? null : { usd: draft.spendUsd.trim(), period: draft.period } }),
    rateLimit:
      rpm === '' && tpm === ''
        ? null
        : { requestsPerMinute: rpm === '' ? null : Number(rpm), tokensPerMinute: tpm === '' ? null : Number(tpm) },
  };
}

/** Scopes, model allowlist, spend limit and rate limits of a key: shared by the create form and the edit dialog. */
export function KeyLimitsFields({
  draft,
  onChange,
}: {
  draft: KeyLimitsDraft;
  onChange: (draft: KeyLimitsDraft) => void;
}) {
  const id = useId();
  const set = (change: Partial<KeyLimitsDraft>) => onChange({ ...draft, ...change });
  const toggle = (scope: KeyScope, on: boolean) =>
    set({ scopes: on ? [...draft.scopes, scope] : draft.scopes.filter((entry) => entry !== scope) });
  return (
    <div className="key-limits">
      <fieldset className="field">
        <legend>Permissions</legend>
        {(
          [
            ['full', 'Full access'],
            ['read_only', 'Read-only (usage, ledger and account)'],
            ['custom', 'Choose scopes'],
          ] as const
        ).map(([value, label]) => (
          <label key={value} className="inline-choice">
            <input
              type="radio"
              name={`${id}-access`}
              value={value}
              checked={draft.access === value}
              onChange={() => set({ access: value })}
            />{' '}
            {label}
          </label>
        ))}
        {draft.access === 'custom' && (
          <div className="key-scopes">
            {SCOPES.map(({ scope, label }) => (
              <label key={scope} className="inline-choice">
                <input
                  type="checkbox"
                  checked={draft.scopes.includes(scope)}
                  onChange={(event) => toggle(scope, event.target.checked)}
                />{' '}
                <code>{scope}</code> {label}
              </label>
            ))}
          </div>
        )}
      </fieldset>
      <div className="field">
        <label htmlFor={`${id}-models`}>Models</label>
        <input
          id={`${id}-models`}
          className="input"
          placeholder="All models"
          value={draft.models}
          onChange={(event) => set({ models: event.target.value })}
        />
        <p className="field-hint">
          Model ids or whole families (alpha, beta, gamma, delta), comma-separated. Empty: every model.
        </p>
      </div>
      <div className="form-row">
        <div className="field">
          <label htmlFor={`${id}-spend`}>Spend limit (USD)</label>
          <input
            id={`${id}-spend`}
            className="input"
            inputMode="decimal"
            placeholder="No limit"
            value={draft.spendUsd}
            onChange={(event) => set({ spendUsd: event.target.value })}
          />
        </div>
        <div className="field">
          <label htmlFor={`${id}-period`}>Per</label>
          <select
            id={`${id}-period`}
            className="input"
            value={draft.period}
            onChange={(event) => set({ period: event.target.value as SpendPeriod })}
          >
            <option value="day">day (UTC)</option>
            <option value="week">week (from Monday, UTC)</option>
            <option value="month">month (UTC)</option>
            <option value="total">in total</option>
          </select>
        </div>
        <div className="field">
          <label htmlFor={`${id}-rpm`}>Requests / min</label>
          <input
            id={`${id}-rpm`}
            className="input"
            inputMode="numeric"
            placeholder="Tier limit"
            value={draft.rpm}
            onChange={(event) => set({ rpm: event.target.value })}
          />
        </div>
        <div className="field">
          <label htmlFor={`${id}-tpm`}>Tokens / min</label>
          <input
            id={`${id}-tpm`}
            className="input"
            inputMode="numeric"
            placeholder="Tier limit"
            value={draft.tpm}
            onChange={(event) => set({ tpm: event.target.value })}
          />
        </div>
      </div>
      <p className="field-hint">
        Free-allowance tokens do not count against a spend limit. Limits apply from the key's next request.
      </p>
    </div>
  );
}
