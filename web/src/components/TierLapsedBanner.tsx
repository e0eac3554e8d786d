import { useState } from 'react';
import { tiers } from '../api/endpoints';
import type { Standing } from '../api/types';
import { formatUsd } from '../lib/money';
import { useSession } from '../lib/session';
import { Link } from './Link';

/**
 * A bought tier whose renewal the balance could not pay: requests now run at a lower tier's limits. The action that
 * fixes it: buy it again when the balance pays for it, else add credit first. "Stay on …" lets it go for good.
 */
export function TierLapsedBanner({
  lapsed,
  path,
  onChanged,
}: {
  lapsed: NonNullable<Standing['tierLapsed']>;
  path: string;
  /** After the tier was bought again or let go: the standing is asked again. */
  onChanged: () => void;
}) {
  const { refresh } = useSession();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();

  async function act(action: () => Promise<unknown>) {
    setBusy(true);
    setError(undefined);
    try {
      await action();
      refresh();
      onChanged();
    } catch (reason) {
      setError(reason instanceof Error ? reason.message : String(reason));
    } finally {
      setBusy(false);
    }
  }

  return (
    <div className="refusal-banner" role="alert">
      <p>
        <strong>Your {lapsed.tier} tier has lapsed:</strong> its renewal ({formatUsd(lapsed.priceUsd)}) could not be
        paid from your balance, so your requests now run at the <strong>{lapsed.currentTier}</strong> tier's limits.
        {error !== undefined && <span className="banner-error"> {error}</span>}
      </p>
      <div className="banner-actions">
        {lapsed.affordable ? (
          <button
            type="button"
            className="button button-primary button-small"
            disabled={busy}
            onClick={() => act(() => tiers.buy(lapsed.tier))}
          >
            Renew {lapsed.tier} for {formatUsd(lapsed.priceUsd)}
          </button>
        ) : (
          path !== '/billing' && (
            <Link href="/billing" className="button button-primary button-small">
              Add credit to renew
            </Link>
          )
        )}
        <button
          type="button"
          className="button button-secondary button-small"
          disabled={busy}
          onClick={() => act(() => tiers.setRenewal(false))}
        >
          Stay on {lapsed.currentTier}
        </button>
      </div>
    </div>
  );
}
