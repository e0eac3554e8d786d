import type { ReactNode } from 'react';

/** An inline message: errors are announced to screen readers at once. */
export function Notice({ kind, children }: { kind: 'error' | 'success' | 'info' | 'warning'; children: ReactNode }) {
  return (
    <div className={`notice notice-${kind}`} role={kind === 'error' ? 'alert' : 'status'}>
      {children}
    </div>
  );
}

export function ErrorNotice({ error }: { error: Error | undefined }) {
  if (error === undefined) return null;
  return <Notice kind="error">{error.message}</Notice>;
}

export function Loading({ label = 'Loading…' }: { label?: string }) {
  return (
    <p className="muted loading" role="status">
      {label}
    </p>
  );
}
