import type { AlertDelivery, AlertFiring, AlertRule } from '../../api/alerts';
import { formatDateTime } from '../../lib/format';
import { formatUsd } from '../../lib/money';
import { StatusBadge } from '../StatusBadge';

/** A limit's period in words ("day" + "ly" would read "dayly"). */
const PERIOD_ADJECTIVES: Readonly<Record<string, string>> = { day: 'daily', week: 'weekly', month: 'monthly' };

/** A rule in a few words: what it watches. */
export function describeRule(rule: AlertRule | undefined): string {
  if (rule === undefined) return 'a deleted alert';
  if (rule.kind === 'low_balance') return `Balance below ${formatUsd(rule.amountUsd ?? '0')}`;
  const of = rule.scope === 'organisation' ? 'the organisation' : `${rule.scope} ${rule.scopeId ?? ''}`;
  const every = rule.period === null ? '' : `${PERIOD_ADJECTIVES[rule.period] ?? rule.period} `;
  return `${rule.thresholdPercent}% of the ${every}limit of ${of}`;
}

export function FiringsTable({ firings, rules }: { firings: AlertFiring[]; rules: AlertRule[] }) {
  if (firings.length === 0) return <p className="muted">No alert has fired yet.</p>;
  const byId = new Map(rules.map((rule) => [rule.id, rule]));
  return (
    <div className="table-wrap" tabIndex={0} role="region" aria-label="Recent firings, scrollable">
      <table className="table table-stack">
        <caption className="visually-hidden">Alerts that fired, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Fired</th>
            <th scope="col">Alert</th>
            <th scope="col">Balance or spend</th>
          </tr>
        </thead>
        <tbody>
          {firings.map((firing) => (
            <tr key={firing.id}>
              <th scope="row">{formatDateTime(firing.firedAt)}</th>
              <td data-label="Alert">{describeRule(byId.get(firing.ruleId))}</td>
              <td data-label="Balance or spend">
                {firing.balanceUsd !== null
                  ? formatUsd(firing.balanceUsd)
                  : firing.spentUsd !== null
                    ? formatUsd(firing.spentUsd)
                    : '—'}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function outcome(delivery: AlertDelivery): string {
  if (delivery.status === 'delivered')
    return delivery.statusCode === null ? 'Sent' : `Accepted (${delivery.statusCode})`;
  const last = delivery.error ?? (delivery.statusCode === null ? '' : `answered ${delivery.statusCode}`);
  if (delivery.status === 'pending' && delivery.nextAttemptAt !== null)
    return `${last}${last === '' ? '' : '; '}next try ${formatDateTime(delivery.nextAttemptAt)}`;
  return last;
}

export function DeliveriesTable({ deliveries }: { deliveries: AlertDelivery[] }) {
  if (deliveries.length === 0) return <p className="muted">Nothing sent yet.</p>;
  return (
    <div className="table-wrap" tabIndex={0} role="region" aria-label="Deliveries, scrollable">
      <table className="table table-stack">
        <caption className="visually-hidden">Mail and webhook deliveries of the alerts, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Queued</th>
            <th scope="col">Channel</th>
            <th scope="col">Status</th>
            <th scope="col">Attempts</th>
            <th scope="col">Outcome</th>
          </tr>
        </thead>
        <tbody>
          {deliveries.map((delivery) => (
            <tr key={delivery.id}>
              <th scope="row">{formatDateTime(delivery.createdAt)}</th>
              <td data-label="Channel">{delivery.channel === 'email' ? 'Mail' : 'Webhook'}</td>
              <td data-label="Status">
                <StatusBadge status={delivery.status} />
              </td>
              <td data-label="Attempts">{delivery.attempts}</td>
              <td data-label="Outcome" className="wrap-anywhere">
                {outcome(delivery)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
