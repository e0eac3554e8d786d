import { useState, type FormEvent } from 'react';
import { alerts, type AlertKind, type LimitPeriod, type LimitScope, type NewAlertRule } from '../../api/alerts';
import { ApiError } from '../../api/client';
import { Field } from '../Field';
import { Notice } from '../Notice';

const FIELD_NAMES: Record<string, string> = {
  amountUsd: 'amount',
  thresholdPercent: 'threshold',
  scope: 'scope',
  scopeId: 'scope id',
  period: 'period',
  emailTo: 'addresses',
  webhookUrl: 'webhook URL',
};

/** Addresses typed as a list: commas, semicolons or spaces between them; none means the default recipients. */
function addressList(text: string): string[] | null {
  const list = text
    .split(/[\s,;]+/)
    .map((item) => item.trim())
    .filter((item) => item !== '');
  return list.length === 0 ? null : list;
}

/** A new alert rule: what it watches and where it tells. The webhook's signing secret comes back once. */
export function AlertRuleForm({ onCreated }: { onCreated: (secret: string | null) => void }) {
  const [kind, setKind] = useState<AlertKind>('low_balance');
  const [amount, setAmount] = useState('');
  const [threshold, setThreshold] = useState('80');
  const [scope, setScope] = useState<LimitScope>('organisation');
  const [scopeId, setScopeId] = useState('');
  const [period, setPeriod] = useState<LimitPeriod>('month');
  const [emailEnabled, setEmailEnabled] = useState(true);
  const [emailTo, setEmailTo] = useState('');
  const [webhookUrl, setWebhookUrl] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<{ field: string | undefined; text: string }>();

  async function submit(event: FormEvent) {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    const channels = {
      emailEnabled,
      emailTo: addressList(emailTo),
      webhookUrl: webhookUrl.trim() === '' ? null : webhookUrl.trim(),
    };
    const rule: NewAlertRule =
      kind === 'low_balance'
        ? { kind, amountUsd: amount.trim(), ...channels }
        : {
            kind,
            thresholdPercent: Number(threshold),
            scope,
            scopeId: scope === 'organisation' ? null : scopeId.trim(),
            period,
            ...channels,
          };
    try {
      const created = await alerts.create(rule);
      setAmount('');
      setWebhookUrl('');
      onCreated(created.webhookSecret);
    } catch (reason) {
      const field = reason instanceof ApiError ? reason.field?.split('.')[0] : undefined;
      setError({ field, text: (reason as Error).message });
    } finally {
      setBusy(false);
    }
  }

  const errorFor = (field: string) => (error?.field === field ? error.text : undefined);
  return (
    <form onSubmit={submit} className="stack" aria-labelledby="new-alert-heading">
      <h3 id="new-alert-heading">New alert</h3>
      <div className="form-row">
        <div className="field">
          <label htmlFor="alert-kind">Alert when</label>
          <select
            id="alert-kind"
            className="input"
            value={kind}
            onChange={(event) => setKind(event.target.value as AlertKind)}
          >
            <option value="low_balance">the balance falls below an amount</option>
            <option value="limit_threshold">spend reaches a share of a limit</option>
          </select>
        </div>
        {kind === 'low_balance' ? (
          <Field
            label="Amount (USD)"
            inputMode="decimal"
            required
            value={amount}
            onChange={(event) => setAmount(event.target.value)}
            error={errorFor('amountUsd')}
          />
        ) : (
          <Field
            label="Threshold (%)"
            type="number"
            min={1}
            max={100}
            required
            value={threshold}
            onChange={(event) => setThreshold(event.target.value)}
            error={errorFor('thresholdPercent')}
          />
        )}
      </div>
      {kind === 'limit_threshold' && (
        <div className="form-row">
          <div className="field">
            <label htmlFor="alert-scope">Limit of</label>
            <select
              id="alert-scope"
              className="input"
              value={scope}
              onChange={(event) => setScope(event.target.value as LimitScope)}
            >
              <option value="organisation">the organisation</option>
              <option value="project">a project</option>
              <option value="key">a key</option>
            </select>
          </div>
          {scope !== 'organisation' && (
            <Field
              label={scope === 'key' ? 'Key id' : 'Project id'}
              required
              value={scopeId}
              onChange={(event) => setScopeId(event.target.value)}
              error={errorFor('scopeId')}
            />
          )}
          <div className="field">
            <label htmlFor="alert-period">Period</label>
            <select
              id="alert-period"
              className="input"
              value={period}
              onChange={(event) => setPeriod(event.target.value as LimitPeriod)}
            >
              <option value="day">day</option>
              <option value="week">week</option>
              <option value="month">month</option>
            </select>
          </div>
        </div>
      )}
      <div className="form-row">
        <label className="inline-choice">
          <input type="checkbox" checked={emailEnabled} onChange={(event) => setEmailEnabled(event.target.checked)} />{' '}
          Send mail
        </label>
        <Field
          label="Mail to (optional)"
          hint="Leave empty for the owners, admins and billing members."
          value={emailTo}
          disabled={!emailEnabled}
          onChange={(event) => setEmailTo(event.target.value)}
          error={errorFor('emailTo')}
        />
      </div>
      <Field
        label="Webhook URL (optional)"
        hint="https:// only; each POST is signed with a secret shown once, when the alert is created."
        type="url"
        value={webhookUrl}
        onChange={(event) => setWebhookUrl(event.target.value)}
        error={errorFor('webhookUrl')}
      />
      {error !== undefined && (error.field === undefined || FIELD_NAMES[error.field] === undefined) && (
        <Notice kind="error">{error.text}</Notice>
      )}
      <div>
        <button type="submit" className="button button-primary" disabled={busy}>
          {busy ? 'Creating…' : 'Create alert'}
        </button>
      </div>
    </form>
  );
}
