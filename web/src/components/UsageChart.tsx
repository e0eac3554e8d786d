import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import type { TokenCounts, UsageDaily } from '../api/types';
import { formatCompact, formatCount, formatDay } from '../lib/format';
import { formatCost, toChartNumber } from '../lib/money';

const PALETTE = ['#4f46e5', '#0ea5e9', '#10b981', '#f59e0b', '#ef4444', '#8b5cf6', '#14b8a6', '#ec4899', '#84cc16', '#64748b'];

export type UsageMetric = 'cost' | 'tokens';

function tokensOf(counts: TokenCounts): number {
  return counts.inputTokens + counts.outputTokens + counts.cacheReadTokens + counts.cacheWriteTokens;
}

/** The models of the range in name order: a model keeps its color and stack position when the range or the spend changes. */
export function modelsOf(usage: UsageDaily): string[] {
  return usage.byModel.map((entry) => entry.model).sort();
}

interface Row {
  day: string;
  [model: string]: number | string;
}

/**
 * Per-day bars stacked by model. Heights are Numbers (geometry only); the tooltip shows exact amounts from the
 * API's decimal strings.
 */
export function UsageChart({ usage, metric }: { usage: UsageDaily; metric: UsageMetric }) {
  const models = modelsOf(usage);
  const rows: Row[] = usage.days.map(({ day, models: counts }) => {
    const row: Row = { day };
    for (const model of models) {
      const entry = counts[model];
      row[model] = entry === undefined ? 0 : metric === 'cost' ? toChartNumber(entry.costUsd) : tokensOf(entry);
    }
    return row;
  });
  const empty = rows.every((row) => models.every((model) => row[model] === 0));
  const byDay = new Map(usage.days.map((entry) => [entry.day, entry.models]));
  const title = metric === 'cost' ? 'Cost per day by model' : 'Tokens per day by model';
  return (
    <figure className="chart" aria-label={title}>
      <ResponsiveContainer width="100%" height={260}>
        <BarChart data={rows} margin={{ top: 8, right: 8, bottom: 0, left: 0 }}>
          <CartesianGrid vertical={false} stroke="var(--border)" />
          <XAxis dataKey="day" tickFormatter={formatDay} tick={{ fontSize: 12, fill: 'var(--muted)' }} tickLine={false} axisLine={{ stroke: 'var(--border)' }} minTickGap={16} />
          <YAxis
            width={56}
            tick={{ fontSize: 12, fill: 'var(--muted)' }}
            tickLine={false}
            axisLine={false}
            tickFormatter={(value: number) => (metric === 'cost' ? `$${value < 1 && value > 0 ? value.toPrecision(2) : formatCompact(value)}` : formatCompact(value))}
          />
          <Tooltip
            cursor={{ fill: 'var(--hover)' }}
            content={({ active, label }) => {
              if (!active || typeof label !== 'string') return null;
              const counts = byDay.get(label) ?? {};
              const present = models.filter((model) => counts[model] !== undefined);
              return (
                <div className="chart-tooltip">
                  <strong>{formatDay(label)}</strong>
                  {present.length === 0 && <div className="muted">No requests</div>}
                  {present.map((model) => (
                    <div key={model} className="tooltip-row">
                      <span className="swatch" style={{ background: PALETTE[models.indexOf(model) % PALETTE.length] }} />
                      {model}: {metric === 'cost' ? formatCost(counts[model]!.costUsd) : `${formatCount(tokensOf(counts[model]!))} tokens`}
                    </div>
                  ))}
                </div>
              );
            }}
          />
          <Legend wrapperStyle={{ fontSize: 12 }} />
          {models.map((model, index) => (
            <Bar key={model} dataKey={model} stackId="models" fill={PALETTE[index % PALETTE.length]} isAnimationActive={false} maxBarSize={36} />
          ))}
        </BarChart>
      </ResponsiveContainer>
      {empty && <figcaption className="chart-empty muted">{models.length > 0 && metric === 'cost' ? 'No paid usage in this range: the free allowance covered it.' : 'No usage in this range yet.'}</figcaption>}
    </figure>
  );
}
