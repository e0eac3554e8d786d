import type { SpendLimit } from '../../api/limits';
import { toNano } from '../../lib/money';

/**
 * How much of a limit this period's settled spend and the requests in flight take: a meter (amber past 75 %, red past
 * 95 %), its value in whole per mille so no amount passes through a float before the bar.
 */
export function SpendBar({ limit, label }: { limit: SpendLimit; label: string }) {
  const total = toNano(limit.usd);
  const taken = toNano(limit.usedUsd) + toNano(limit.heldUsd);
  const perMille = total <= 0n ? 1000 : Number(taken >= total ? 1000n : (taken * 1000n) / total);
  return (
    <meter
      className="meter"
      min={0}
      max={1000}
      low={750}
      high={950}
      optimum={0}
      value={perMille}
      aria-label={label}
      aria-valuetext={`${perMille / 10}% used`}
    />
  );
}
