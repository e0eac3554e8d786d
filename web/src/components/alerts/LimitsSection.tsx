import { useState, type FormEvent } from 'react';
import { keys as keysApi, projects as projectsApi } from '../../api/endpoints';
import { limits as limitsApi, type LimitPeriod, type LimitScope, type SpendLimit } from '../../api/limits';
import { formatDateTime } from '../../lib/format';
import { formatUsd } from '../../lib/money';
import { roleReason, useCan, useOrganisation } from '../../lib/organisation';
import { useAsync } from '../../lib/use-async';
import { Field } from '../Field';
import { ErrorNotice, Loading, Notice } from '../Notice';
import { SpendBar } from './SpendBar';

const PERIODS: Record<LimitScope, LimitPeriod[]> = {
  organisation: ['day', 'week', 'month'],
  project: ['day', 'week', 'month'],
  key: ['day', 'week', 'month', 'total'],
};
const PERIOD_WORDS: Record<LimitPeriod, string> = {
  day: 'per day',
  week: 'per week',
  month: 'per month',
  total: 'in total',
};

/** The organisation's, its projects' and its keys' spend limits, each with this period's spend; set and clear them. */
export function LimitsSection() {
  const { current } = useOrganisation();
  const canManage = useCan('limits:manage');
  // The limits show money: members who read the ledger see them (a developer does not).
  const canRead = useCan('billing:read');
  const data = useAsync(
    () => (canRead ? Promise.all([limitsApi.list(), projectsApi.list(), keysApi.list()]) : Promise.resolve(undefined)),
    [current?.id, canRead],
  );
  const [message, setMessage] = useState<{ kind: 'success' | 'error'; text: string }>();

  const [limitList, projectList, keyList] = data.data ?? [undefined, undefined, undefined];
  const nameOf = (limit: Pick<SpendLimit, 'scope' | 'scopeId'>): string => {
    if (limit.scope === 'organisation') return current?.name ?? 'Organisation';
    if (limit.scope === 'project')
      return `Project ${projectList?.projects.find((project) => project.id === limit.scopeId)?.name ?? limit.scopeId}`;
    return `Key ${keyList?.keys.find((key) => key.id === limit.scopeId)?.name ?? limit.scopeId}`;
  };

  async function clear(limit: SpendLimit) {
    setMessage(undefined);
    try {
      await limitsApi.clear(limit.scope, limit.scopeId, limit.period);
      setMessage({ kind: 'success', text: `${nameOf(limit)} has no limit ${PERIOD_WORDS[limit.period]} now.` });
    } catch (reason) {
      setMessage({ kind: 'error', text: (reason as Error).message });
    }
    data.reload();
  }

  return (
    <section className="card section" aria-labelledby="limits-heading">
      <h2 id="limits-heading">Spend limits</h2>
      {!canRead && <p className="muted small">{roleReason(current?.role, 'seeing spend limits')}</p>}
      {message !== undefined && <Notice kind={message.kind}>{message.text}</Notice>}
      <ErrorNotice error={data.error} />
      {data.loading && data.data === undefined && <Loading />}
      {limitList !== undefined &&
        (limitList.limits.length === 0 ? (
          <p className="muted">No spend limits: requests are limited by the balance only.</p>
        ) : (
          <ul className="plain-list spend-limits">
            {limitList.limits.map((limit) => (
              <li key={limit.id} className="spend-limit">
                <div className="spend-limit-head">
                  <strong className="wrap-anywhere">
                    {nameOf(limit)} · {formatUsd(limit.usd)} {PERIOD_WORDS[limit.period]}
                  </strong>
                  {canManage && (
                    <button
                      type="button"
                      className="button button-secondary button-small"
                      aria-label={`Clear the limit of ${nameOf(limit)} ${PERIOD_WORDS[limit.period]}`}
                      onClick={() => void clear(limit)}
                    >
                      Clear
                    </button>
                  )}
                </div>
                <SpendBar limit={limit} label={`Spend of ${nameOf(limit)} ${PERIOD_WORDS[limit.period]}`} />
                <p className="small muted">
                  {formatUsd(limit.usedUsd)} spent, {formatUsd(limit.heldUsd)} held, {formatUsd(limit.remainingUsd)}{' '}
                  left
                  {limit.resetsAt === null ? '' : ` · resets ${formatDateTime(limit.resetsAt)}`}
                </p>
              </li>
            ))}
          </ul>
        ))}
      {canManage
        ? limitList !== undefined && (
            <SetLimitForm
              organisationId={current?.id ?? ''}
              projects={projectList?.projects.filter((project) => project.archivedAt === null) ?? []}
              keys={keyList?.keys.filter((key) => key.kind === 'standard') ?? []}
              onSet={(text) => {
                setMessage({ kind: 'success', text });
                data.reload();
              }}
            />
          )
        : canRead && <p className="muted small">{roleReason(current?.role, 'changing limits')}</p>}
    </section>
  );
}

function SetLimitForm({
  organisationId,
  projects,
  keys,
  onSet,
}: {
  organisationId: string;
  projects: { id: string; name: string }[];
  keys: { id: string; name: string }[];
  onSet: (message: string) => void;
}) {
  const [scope, setScope] = useState<LimitScope>('organisation');
  const [target, setTarget] = useState('');
  const [period, setPeriod] = useState<LimitPeriod>('month');
  const [usd, setUsd] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const choices = scope === 'project' ? projects : scope === 'key' ? keys : [];
  const scopeId = scope === 'organisation' ? organisationId : target || (choices[0]?.id ?? '');

  async function submit(event: FormEvent) {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const { limit } = await limitsApi.set(scope, scopeId, period, usd.trim());
      setUsd('');
      onSet(`The limit is ${formatUsd(limit.usd)} ${PERIOD_WORDS[limit.period]}.`);
    } catch (reason) {
      setError((reason as Error).message);
    } finally {
      setBusy(false);
    }
  }

  return (
    <form onSubmit={submit} className="stack" aria-labelledby="set-limit-heading">
      <h3 id="set-limit-heading">Set a limit</h3>
      <div className="form-row">
        <div className="field">
          <label htmlFor="limit-scope">Limit</label>
          <select
            id="limit-scope"
            className="input"
            value={scope}
            onChange={(event) => {
              const next = event.target.value as LimitScope;
              setScope(next);
              setTarget('');
              if (!PERIODS[next].includes(period)) setPeriod('month');
            }}
          >
            <option value="organisation">the organisation</option>
            <option value="project">a project</option>
            <option value="key">a key</option>
          </select>
        </div>
        {scope !== 'organisation' && (
          <div className="field">
            <label htmlFor="limit-target">{scope === 'project' ? 'Project' : 'Key'}</label>
            <select
              id="limit-target"
              className="input"
              value={scopeId}
              onChange={(event) => setTarget(event.target.value)}
            >
              {choices.map((choice) => (
                <option key={choice.id} value={choice.id}>
                  {choice.name}
                </option>
              ))}
            </select>
          </div>
        )}
        <div className="field">
          <label htmlFor="limit-period">Period</label>
          <select
            id="limit-period"
            className="input"
            value={period}
            onChange={(event) => setPeriod(event.target.value as LimitPeriod)}
          >
            {PERIODS[scope].map((each) => (
              <option key={each} value={each}>
                {PERIOD_WORDS[each]}
              </option>
            ))}
          </select>
        </div>
        <Field
          label="Limit (USD)"
          inputMode="decimal"
          required
          value={usd}
          onChange={(event) => setUsd(event.target.value)}
          error={error}
        />
        <button type="submit" className="button button-primary" disabled={busy || scopeId === ''}>
          {busy ? 'Setting…' : 'Set limit'}
        </button>
      </div>
    </form>
  );
}
