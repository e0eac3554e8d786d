import { formatDateTime, formatUtc } from '../lib/format';

/** An instant to the second in the user's time zone, UTC on hover, machine-readable for assistive tech. */
export function DateTime({ epochMs }: { epochMs: number }) {
  return (
    <time dateTime={new Date(epochMs).toISOString()} title={formatUtc(epochMs)}>
      {formatDateTime(epochMs)}
    </time>
  );
}
