import type { FreeAllowance } from '../api/types';
import { formatCount, formatDateTime, formatRelative } from '../lib/format';

/** Today's free tokens: a meter plus the numbers and the reset time (UTC midnight, shown in local time). */
export function AllowanceMeter({ allowance }: { allowance: FreeAllowance }) {
  const { limitTokens, usedTokens, leftTokens, resetsAt } = allowance;
  return (
    <div className="allowance">
      {/* low/high/optimum: the bar turns amber past 75 % and red past 95 %, since using it up is not the good end. */}
      <meter
        className="meter"
        min={0}
        max={Math.max(limitTokens, 1)}
        low={limitTokens * 0.75}
        high={limitTokens * 0.95}
        optimum={0}
        value={Math.min(usedTokens, limitTokens)}
        aria-label="Free tokens used today"
      />
      <p className="small">
        <strong>{formatCount(usedTokens)}</strong> used · <strong>{formatCount(leftTokens)}</strong> left of{' '}
        {formatCount(limitTokens)}
      </p>
      <p className="small muted">
        Resets {formatRelative(resetsAt)} ({formatDateTime(resetsAt)})
      </p>
    </div>
  );
}
