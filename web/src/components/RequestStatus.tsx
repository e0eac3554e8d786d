import { statusWords } from '../lib/request-status';

const BADGE_TONE = { ok: 'green', warning: 'amber', error: 'red' } as const;

/** A request's status in words; its meaning one click away (a disclosure, so keyboard and screen readers reach it). */
export function RequestStatus({ status }: { status: string }) {
  const words = statusWords(status);
  if (words.tone === 'ok') return <span className={`badge badge-${BADGE_TONE.ok}`}>{words.label}</span>;
  return (
    <details className="status-details">
      <summary>
        <span className={`badge badge-${BADGE_TONE[words.tone]}`}>{words.label}</span>
      </summary>
      <p className="small">{words.detail}</p>
    </details>
  );
}
