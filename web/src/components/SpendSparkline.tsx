import { Bar, BarChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { niceTicks } from '../lib/chart-ticks';
import { formatDay } from '../lib/format';
import { axisUsdFormatter, formatCost, toChartNumber } from '../lib/money';

interface Point {
  day: string;
  costUsd: string;
  value: number;
}

/**
 * 30 days of spend, one bar per day: nothing is drawn between days (an interpolated line ramped up before the only
 * day with spend), with a day axis and a dollar axis; the tooltip shows the exact amount, not the plotted float.
 */
export function SpendSparkline({ days }: { days: { day: string; costUsd: string }[] }) {
  const points: Point[] = days.map((entry) => ({ ...entry, value: toChartNumber(entry.costUsd) }));
  const ticks = niceTicks(Math.max(...points.map((point) => point.value)), 2);
  const formatAxis = axisUsdFormatter(ticks);
  return (
    <div className="sparkline" role="img" aria-label={`Spend per day over the last ${days.length} days`}>
      <ResponsiveContainer width="100%" height={120}>
        <BarChart data={points} margin={{ top: 4, right: 4, bottom: 0, left: 0 }}>
          <XAxis
            dataKey="day"
            tickFormatter={formatDay}
            interval="preserveStartEnd"
            minTickGap={24}
            tick={{ fontSize: 11, fill: 'var(--muted)' }}
            tickLine={false}
            axisLine={{ stroke: 'var(--border-strong)' }}
          />
          <YAxis
            ticks={ticks}
            domain={[0, ticks[ticks.length - 1]!]}
            tickFormatter={formatAxis}
            width={64}
            tick={{ fontSize: 11, fill: 'var(--muted)' }}
            tickLine={false}
            axisLine={false}
          />
          <Tooltip
            cursor={{ fill: 'var(--hover)' }}
            content={({ active, payload }) => {
              const point = payload?.[0]?.payload as Point | undefined;
              if (!active || point === undefined) return null;
              return (
                <div className="chart-tooltip">
                  {formatDay(point.day)}: {formatCost(point.costUsd)}
                </div>
              );
            }}
          />
          <Bar dataKey="value" fill="var(--accent)" radius={[2, 2, 0, 0]} isAnimationActive={false} />
        </BarChart>
      </ResponsiveContainer>
    </div>
  );
}
