const TONES: Record<string, string> = {
  active: 'green',
  healthy: 'green',
  ok: 'green',
  revoked: 'gray',
  expired: 'amber',
  disabled: 'red',
  cooling_down: 'amber',
  error: 'red',
  delivered: 'green',
  pending: 'amber',
  failed: 'red',
};

/** A colored pill; the text carries the meaning, the color only helps. */
export function StatusBadge({ status, label }: { status: string; label?: string }) {
  return <span className={`badge badge-${TONES[status] ?? 'gray'}`}>{label ?? status.replace('_', ' ')}</span>;
}
