import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import type { TokenCounts, UsageDaily } from '../api/types';
import { niceTicks } from '../lib/chart-ticks';
import { formatCompact, formatCount, formatDay } from '../lib/format';
import { axisUsdFormatter, formatUsd, sumUsd, toChartNumber, toNano } from '../lib/money';

/** Twelve colours far apart in hue (and readable on light and dark surfaces); past them, golden-angle hues. */
const PALETTE = [
  '#4f46e5',
  '#0891b2',
  '#16a34a',
  '#d97706',
  '#dc2626',
  '#9333ea',
  '#0d9488',
  '#db2777',
  '#65a30d',
  '#475569',
  '#ea580c',
  '#2563eb',
];

/** A distinct colour per model of the range: the palette first, then hues 137.5° apart (never two alike). */
export function modelColor(index: number): string {
  return index < PALETTE.length ? PALETTE[index]! : `hsl(${Math.round((index * 137.508) % 360)} 65% 45%)`;
}

export type UsageMetric = 'cost' | 'tokens';

function tokensOf(counts: TokenCounts): number {
  return counts.inputTokens + counts.outputTokens + counts.cacheReadTokens + counts.cacheWriteTokens;
}

/** The models of the range in name order: a model keeps its color and stack position when the range or the spend changes. */
export function modelsOf(usage: UsageDaily): string[] {
  return [...usage.filters.models].sort();
}

interface Row {
  day: string;
  [model: string]: number | string;
}

/**
 * Per-day bars stacked by model. Heights are Numbers (geometry only); the tooltip shows the day's exact total and
 * each model with something that day, from the API's decimal strings.
 */
export function UsageChart({ usage, metric }: { usage: UsageDaily; metric: UsageMetric }) {
  const allModels = modelsOf(usage);
  // Colours by position among all the range's models, so a filter does not recolour a model.
  const colorOf = (model: string) => modelColor(Math.max(0, allModels.indexOf(model)));
  const models = allModels.filter((model) => usage.days.some((day) => day.models[model] !== undefined));
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
  const highest = Math.max(0, ...rows.map((row) => models.reduce((sum, model) => sum + Number(row[model] ?? 0), 0)));
  // Round ticks from zero: one decimal count for the whole axis.
  const ticks = niceTicks(highest);
  const costTick = axisUsdFormatter(ticks);
  return (
    <figure className="chart" aria-label={title}>
      <ResponsiveContainer width="100%" height={260}>
        <BarChart data={rows} margin={{ top: 8, right: 8, bottom: 0, left: 0 }}>
          <CartesianGrid vertical={false} stroke="var(--border)" />
          <XAxis
            dataKey="day"
            tickFormatter={formatDay}
            tick={{ fontSize: 12, fill: 'var(--muted)' }}
            tickLine={false}
            axisLine={{ stroke: 'var(--border)' }}
            minTickGap={16}
          />
          <YAxis
            width={metric === 'cost' ? 72 : 56}
            tick={{ fontSize: 12, fill: 'var(--muted)' }}
            tickLine={false}
            axisLine={false}
            {...(highest > 0 ? { ticks, domain: [0, ticks[ticks.length - 1]!] } : {})}
            tickFormatter={(value: number) => (metric === 'cost' ? costTick(value) : formatCompact(value))}
          />
          <Tooltip
            cursor={{ fill: 'var(--hover)' }}
            content={({ active, label }) => {
              if (!active || typeof label !== 'string') return null;
              const counts = byDay.get(label) ?? {};
              // Only the models with something that day (a free-allowance day has tokens but costs $0.00).
              const present = models.filter((model) => {
                const entry = counts[model];
                return entry !== undefined && (metric === 'cost' ? toNano(entry.costUsd) !== 0n : tokensOf(entry) > 0);
              });
              const total =
                metric === 'cost'
                  ? formatUsd(sumUsd(present.map((model) => counts[model]!.costUsd)))
                  : `${formatCount(present.reduce((sum, model) => sum + tokensOf(counts[model]!), 0))} tokens`;
              return (
                <div className="chart-tooltip">
                  <strong>
                    {formatDay(label)}: {total}
                  </strong>
                  {present.length === 0 && (
                    <div className="muted">{metric === 'cost' ? 'Nothing charged' : 'No requests'}</div>
                  )}
                  {present.map((model) => (
                    <div key={model} className="tooltip-row">
                      <span className="swatch" style={{ background: colorOf(model) }} />
                      {model}:{' '}
                      {metric === 'cost'
                        ? formatUsd(counts[model]!.costUsd)
                        : `${formatCount(tokensOf(counts[model]!))} tokens`}
                    </div>
                  ))}
                </div>
              );
            }}
          />
          <Legend wrapperStyle={{ fontSize: 12 }} />
          {models.map((model) => (
            <Bar
              key={model}
              dataKey={model}
              stackId="models"
              fill={colorOf(model)}
              isAnimationActive={false}
              maxBarSize={36}
            />
          ))}
        </BarChart>
      </ResponsiveContainer>
      {empty && (
        <figcaption className="chart-empty muted">
          {models.length > 0 && metric === 'cost'
            ? 'No paid usage in this range: the free allowance covered it.'
            : 'No usage in this range yet.'}
        </figcaption>
      )}
    </figure>
  );
}
