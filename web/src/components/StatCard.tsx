import type { ReactNode } from 'react';

export function StatCard({
  label,
  value,
  detail,
  children,
}: {
  label: string;
  value: ReactNode;
  detail?: ReactNode;
  children?: ReactNode;
}) {
  return (
    <section className="card stat" aria-label={label}>
      <h2 className="stat-label">{label}</h2>
      <p className="stat-value">{value}</p>
      {detail !== undefined && <p className="stat-detail">{detail}</p>}
      {children}
    </section>
  );
}
