import { useState } from 'react';
import { alerts as alertsApi, type AlertRule } from '../api/alerts';
import { AlertRuleForm } from '../components/alerts/AlertRuleForm';
import { DeliveriesTable, describeRule, FiringsTable } from '../components/alerts/AlertHistory';
import { LimitsSection } from '../components/alerts/LimitsSection';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { CopyButton } from '../components/CopyButton';
import { Dialog } from '../components/Dialog';
import { ErrorNotice, Loading, Notice } from '../components/Notice';
import { PageHeader } from '../components/PageHeader';
import { formatDate } from '../lib/format';
import { roleReason, useCan, useOrganisation } from '../lib/organisation';
import { useAsync } from '../lib/use-async';

function channelsOf(rule: AlertRule): string {
  const channels: string[] = [];
  if (rule.emailEnabled)
    channels.push(rule.emailTo === null ? 'mail to owners, admins, billing' : `mail to ${rule.emailTo.join(', ')}`);
  if (rule.webhookUrl !== null) channels.push(`webhook ${rule.webhookUrl}`);
  return channels.length === 0 ? 'shown here only' : channels.join('; ');
}

/**
 * The money guards of the session's organisation: spend limits with this period's spend, and budget alerts with what
 * fired and each mail and webhook sent.
 */
export function LimitsAlertsPage() {
  const { current } = useOrganisation();
  const canManage = useCan('alerts:manage');
  const overview = useAsync(() => alertsApi.overview(), [current?.id]);
  const [message, setMessage] = useState<{ kind: 'success' | 'error'; text: string }>();
  const [secret, setSecret] = useState<string | null>(null);
  const [deleting, setDeleting] = useState<AlertRule>();
  const [busy, setBusy] = useState(false);

  const rules = overview.data?.rules ?? [];
  return (
    <>
      <PageHeader
        title="Limits & alerts"
        description={`When ${current?.name ?? 'this organisation'} hears about its money: a low balance, or spend nearing a limit.`}
        actions={
          <button type="button" className="button button-secondary" onClick={() => overview.reload()}>
            Refresh
          </button>
        }
      />
      <LimitsSection />
      {message !== undefined && <Notice kind={message.kind}>{message.text}</Notice>}
      <ErrorNotice error={overview.error} />
      {overview.loading && overview.data === undefined && <Loading />}
      {overview.data !== undefined && (
        <>
          <section className="card section" aria-labelledby="alert-rules-heading">
            <h2 id="alert-rules-heading">Alerts</h2>
            {rules.length === 0 ? (
              <p className="muted">No alerts yet.</p>
            ) : (
              <ul className="plain-list alert-rules">
                {rules.map((rule) => (
                  <li key={rule.id} className="alert-rule">
                    <div>
                      <strong>{describeRule(rule)}</strong>
                      <div className="muted small wrap-anywhere">
                        {channelsOf(rule)} · since {formatDate(rule.createdAt)}
                      </div>
                    </div>
                    {canManage && (
                      <button
                        type="button"
                        className="button button-secondary button-small"
                        aria-label={`Delete the alert: ${describeRule(rule)}`}
                        onClick={() => setDeleting(rule)}
                      >
                        Delete
                      </button>
                    )}
                  </li>
                ))}
              </ul>
            )}
            {canManage ? (
              <AlertRuleForm
                onCreated={(created) => {
                  setMessage({ kind: 'success', text: 'The alert is set.' });
                  setSecret(created);
                  overview.reload();
                }}
              />
            ) : (
              <p className="muted small">{roleReason(current?.role, 'changing alerts')}</p>
            )}
          </section>
          <section className="card section" aria-labelledby="alert-firings-heading">
            <h2 id="alert-firings-heading">Recent alerts</h2>
            <FiringsTable firings={overview.data.firings} rules={rules} />
          </section>
          <section className="card section" aria-labelledby="alert-deliveries-heading">
            <h2 id="alert-deliveries-heading">Mail and webhook deliveries</h2>
            <DeliveriesTable deliveries={overview.data.deliveries} />
          </section>
        </>
      )}
      <Dialog
        title="Save the webhook's signing secret"
        open={secret !== null}
        onClose={() => setSecret(null)}
        actions={
          <button type="button" className="button button-primary" onClick={() => setSecret(null)}>
            Done
          </button>
        }
      >
        <div className="notice notice-warning" role="note">
          Your receiver verifies each POST with this secret. It will not be shown again.
        </div>
        <div className="secret-row">
          {/* Wrapped, not scrolled: the whole secret stays in view on a phone. */}
          <textarea
            className="input secret break"
            aria-label="Webhook signing secret"
            readOnly
            rows={2}
            value={secret ?? ''}
            onFocus={(event) => event.target.select()}
          />
          <CopyButton text={secret ?? ''} />
        </div>
      </Dialog>
      <ConfirmDialog
        title="Delete alert"
        open={deleting !== undefined}
        confirmLabel="Delete"
        danger
        busy={busy}
        onCancel={() => setDeleting(undefined)}
        onConfirm={() => {
          const rule = deleting!;
          setDeleting(undefined);
          setBusy(true);
          alertsApi
            .remove(rule.id)
            .then(
              () => setMessage({ kind: 'success', text: 'The alert was deleted.' }),
              (reason: Error) => setMessage({ kind: 'error', text: reason.message }),
            )
            .finally(() => {
              setBusy(false);
              overview.reload();
            });
        }}
      >
        <p>{describeRule(deleting)} stops alerting. What it sent stays listed.</p>
      </ConfirmDialog>
    </>
  );
}
