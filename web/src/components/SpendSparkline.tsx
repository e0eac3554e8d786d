import { Area, AreaChart, ResponsiveContainer, Tooltip, XAxis } from 'recharts';
import { formatCost, toChartNumber } from '../lib/money';
import { formatDay } from '../lib/format';

interface Point {
  day: string;
  costUsd: string;
  value: number;
}

/** 30 days of spend as a small area chart; the tooltip shows the exact amount, not the plotted float. */
export function SpendSparkline({ days }: { days: { day: string; costUsd: string }[] }) {
  const points: Point[] = days.map((entry) => ({ ...entry, value: toChartNumber(entry.costUsd) }));
  return (
    <div className="sparkline" role="img" aria-label={`Spend per day over the last ${days.length} days`}>
      <ResponsiveContainer width="100%" height={64}>
        <AreaChart data={points} margin={{ top: 4, right: 0, bottom: 0, left: 0 }}>
          <defs>
            <linearGradient id="spark-fill" x1="0" y1="0" x2="0" y2="1">
              <stop offset="0%" stopColor="var(--accent)" stopOpacity={0.35} />
              <stop offset="100%" stopColor="var(--accent)" stopOpacity={0} />
            </linearGradient>
          </defs>
          <XAxis dataKey="day" hide />
          <Tooltip
            cursor={{ stroke: 'var(--border-strong)' }}
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
          <Area
            type="monotone"
            dataKey="value"
            stroke="var(--accent)"
            strokeWidth={2}
            fill="url(#spark-fill)"
            isAnimationActive={false}
          />
        </AreaChart>
      </ResponsiveContainer>
    </div>
  );
}
