import { formatUsd, formatUsdCents } from '../lib/money';

/** A summary amount to the cent (`formatUsdCents`), the exact figure on hover. */
export function CentsAmount({ usd, testId }: { usd: string; testId?: string }) {
  const exact = formatUsd(usd);
  const shown = formatUsdCents(usd);
  return (
    <span title={shown === exact ? undefined : `Exactly ${exact}`} data-testid={testId}>
      {shown}
    </span>
  );
}
