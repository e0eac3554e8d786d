import type { ReactNode } from 'react';

/** The card the pages opened from a mailed link share, signed in or not (the log-in page's look). */
export function LinkPageFrame({ title, children }: { title: string; children: ReactNode }) {
  return (
    <main className="auth-page">
      <div className="auth-card card">
        <div className="auth-brand" aria-hidden="true">
          <span className="brand-mark">T</span> Tollgate
        </div>
        <h1>{title}</h1>
        {children}
      </div>
    </main>
  );
}
