import { useState } from 'react';
import { roleReason, useCan, useOrganisation } from '../lib/organisation';
import { tiers as tiersApi } from '../api/endpoints';
import type { TierOption, TierStatus } from '../api/types';
import { formatCount, formatDate } from '../lib/format';
import { formatUsd, toNano } from '../lib/money';
import { useAsync } from '../lib/use-async';
import { ConfirmDialog } from './ConfirmDialog';
import { Link } from './Link';
import { ErrorNotice, Loading, Notice } from './Notice';

function limits(tier: { requestsPerMinute: number; tokensPerMinute: number | null }): string {
  return `${formatCount(tier.requestsPerMinute)} requests per minute per key${tier.tokensPerMinute === null ? '' : ` and ${formatCount(tier.tokensPerMinute)} tokens per minute`}`;
}

/** How a tier above the current one is reached, in words. */
function howToReach(tier: TierOption, status: TierStatus): string {
  const ways: string[] = [];
  if (tier.reachedAtTotalPaidUsd !== null) {
    ways.push(
      `automatic once your payments reach ${formatUsd(tier.reachedAtTotalPaidUsd)} in total (so far ${formatUsd(status.paidTotalUsd)})`,
    );
  }
  if (tier.priceUsd !== null && tier.periodDays !== null)
    ways.push(`${formatUsd(tier.priceUsd)} per ${tier.periodDays} days from your balance`);
  if (ways.length === 0) return 'Ask the operator of this gateway.';
  const text = ways.join(', or ');
  return text.charAt(0).toUpperCase() + text.slice(1) + '.';
}

/**
 * The user's rate-limit tier, what each higher tier gives and takes, and the one-click upgrade: a tier
 * bought from the balance applies from the next request, and renews every period unless turned off.
 */
export function TierUpgrade({ onChanged }: { onChanged?: () => void }) {
  const state = useAsync(tiersApi.get, []);
  const { current } = useOrganisation();
  const canPay = useCan('billing:manage');
  const [buying, setBuying] = useState<TierOption>();
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState<{ kind: 'success' | 'error'; text: string }>();
  const status = state.data;

  async function act(action: () => Promise<TierStatus>, success: (next: TierStatus) => string) {
    setBusy(true);
    setMessage(undefined);
    try {
      const next = await action();
      // The action answers with the whole new status: the table and the message change in the same render.
      state.replace(next);
      setMessage({ kind: 'success', text: success(next) });
      onChanged?.();
    } catch (reason) {
      setMessage({ kind: 'error', text: (reason as Error).message });
    } finally {
      setBusy(false);
      setBuying(undefined);
    }
  }

  if (status === undefined) return state.error !== undefined ? <ErrorNotice error={state.error} /> : <Loading />;
  const next = status.tiers.find((tier) => tier.position === 'above');
  return (
    <>
      <p>
        Your <strong>{status.current.name}</strong> tier allows {limits(status.current)}. Requests over the limit are
        refused with status 429 and a time to retry after.
      </p>
      {status.source === 'paid_total' && (
        <p className="muted">
          You reached this tier with your payments ({formatUsd(status.paidTotalUsd)} in total); it stays.
        </p>
      )}
      {status.bought !== null && (
        <div className="tier-bought">
          <p className="muted">
            Bought until {formatDate(status.bought.until)}.{' '}
            {status.bought.renews
              ? 'It renews from your balance at the end of the period.'
              : 'It ends then: renewal is off.'}
          </p>
          <button
            type="button"
            className="button button-secondary"
            disabled={busy || !canPay}
            title={canPay ? undefined : roleReason(current?.role, 'changing the renewal')}
            onClick={() =>
              void act(
                () => tiersApi.setRenewal(!status.bought!.renews),
                (after) =>
                  after.bought?.renews ? 'Renewal is on.' : 'Renewal is off: the tier ends with this period.',
              )
            }
          >
            {status.bought.renews ? 'Turn off renewal' : 'Turn on renewal'}
          </button>
        </div>
      )}
      {next !== undefined && (
        <p className="muted">
          Next: {next.name} gives {limits(next)}.
        </p>
      )}
      {message !== undefined && <Notice kind={message.kind}>{message.text}</Notice>}
      <div className="table-wrap" tabIndex={0} role="region" aria-label="Rate-limit tiers, scrollable">
        <table className="table table-stack">
          <caption className="visually-hidden">Rate-limit tiers</caption>
          <thead>
            <tr>
              <th scope="col">Tier</th>
              <th scope="col" className="num">
                Requests/min
              </th>
              <th scope="col" className="num">
                Tokens/min
              </th>
              <th scope="col">How to get it</th>
              <th scope="col" className="actions">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {status.tiers.map((tier) => {
              const affordable = tier.priceUsd !== null && toNano(status.availableUsd) >= toNano(tier.priceUsd);
              return (
                <tr
                  key={tier.name}
                  aria-current={tier.position === 'current' ? 'true' : undefined}
                  className={tier.position === 'current' ? 'row-current' : undefined}
                >
                  <th scope="row">
                    {tier.name}
                    {tier.position === 'current' && <span className="badge badge-blue tier-current">current</span>}
                  </th>
                  <td data-label="Requests/min" className="num">
                    {formatCount(tier.requestsPerMinute)}
                  </td>
                  <td data-label="Tokens/min" className="num">
                    {tier.tokensPerMinute === null ? 'unlimited' : formatCount(tier.tokensPerMinute)}
                  </td>
                  <td data-label="How to get it" className="tier-how">
                    {tier.position === 'above'
                      ? howToReach(tier, status)
                      : tier.position === 'current'
                        ? 'Your tier'
                        : 'Included'}
                  </td>
                  <td className="actions">
                    {tier.position === 'above' && tier.priceUsd !== null && (
                      <>
                        <button
                          type="button"
                          className="button button-primary"
                          disabled={busy || !affordable || !canPay}
                          title={canPay ? undefined : roleReason(current?.role, 'buying a tier')}
                          onClick={() => setBuying(tier)}
                        >
                          Upgrade to {tier.name}
                        </button>
                        {!affordable && (
                          <span className="small muted tier-afford">
                            {' '}
                            <Link href="/billing">Add credit</Link> first (available {formatUsd(status.availableUsd)})
                          </span>
                        )}
                      </>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      <ConfirmDialog
        title={buying === undefined ? 'Upgrade' : `Upgrade to ${buying.name}?`}
        open={buying !== undefined}
        confirmLabel={buying === undefined ? 'Upgrade' : `Pay ${formatUsd(buying.priceUsd ?? '0')} and upgrade`}
        busy={busy}
        onCancel={() => setBuying(undefined)}
        onConfirm={() => {
          const tier = buying!;
          void act(
            () => tiersApi.buy(tier.name),
            (after) =>
              `You are on the ${after.current.name} tier now: ${limits(after.current)}, from your next request.`,
          );
        }}
      >
        {buying !== undefined && (
          <p>
            {formatUsd(buying.priceUsd ?? '0')} is taken from your balance now (available:{' '}
            {formatUsd(status.availableUsd)}), and {limits(buying)} apply from your next request. It renews every{' '}
            {buying.periodDays} days from your balance; you can turn renewal off at any time.
          </p>
        )}
      </ConfirmDialog>
    </>
  );
}
