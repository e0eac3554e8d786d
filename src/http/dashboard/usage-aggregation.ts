import { formatUsd } from '../../billing/money.js';
import type { DailyUsageRow } from '../../storage/types.js';

/** Sums of rolled-up usage rows; money stays bigint until presented. */
export interface UsageSums {
  requests: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** The part of `cacheWriteTokens` written for an hour. */
  cacheWrite1hTokens: number;
  costNano: bigint;
  /** Reported tokens no free allowance, balance or key limit could pay, and their cost at list price. */
  unbilledTokens: number;
  unbilledNano: bigint;
}

export const emptySums = (): UsageSums => ({
  requests: 0,
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  cacheWrite1hTokens: 0,
  costNano: 0n,
  unbilledTokens: 0,
  unbilledNano: 0n,
});

export function addRow(sums: UsageSums, row: DailyUsageRow): void {
  sums.requests += row.requests;
  sums.inputTokens += row.inputTokens;
  sums.outputTokens += row.outputTokens;
  sums.cacheReadTokens += row.cacheReadTokens;
  sums.cacheWriteTokens += row.cacheWriteTokens;
  sums.cacheWrite1hTokens += row.cacheWrite1hTokens;
  sums.costNano += row.costNano;
  sums.unbilledTokens += row.unbilledTokens;
  sums.unbilledNano += row.unbilledNano;
}

/** Every token the requests moved: input (uncached), cache reads and writes, output (reasoning is inside output). */
export function totalTokens(sums: UsageSums): number {
  return sums.inputTokens + sums.cacheReadTokens + sums.cacheWriteTokens + sums.outputTokens;
}

export function presentSums(sums: UsageSums) {
  return {
    requests: sums.requests,
    inputTokens: sums.inputTokens,
    outputTokens: sums.outputTokens,
    cacheReadTokens: sums.cacheReadTokens,
    cacheWriteTokens: sums.cacheWriteTokens,
    cacheWrite1hTokens: sums.cacheWrite1hTokens,
    costUsd: formatUsd(sums.costNano),
    unbilledTokens: sums.unbilledTokens,
    unbilledUsd: formatUsd(sums.unbilledNano),
  };
}

/** Rows summed per value of `key`, in first-seen order. */
export function groupSums(rows: readonly DailyUsageRow[], key: (row: DailyUsageRow) => string): Map<string, UsageSums> {
  const groups = new Map<string, UsageSums>();
  for (const row of rows) {
    const name = key(row);
    let sums = groups.get(name);
    if (sums === undefined) {
      sums = emptySums();
      groups.set(name, sums);
    }
    addRow(sums, row);
  }
  return groups;
}
