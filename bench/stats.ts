/**
 * Percentiles of latency samples. Samples are kept whole (not bucketed) because a run holds at most a few
 * hundred thousand of them, and exact tails are what the gateway-vs-direct comparison is about.
 */

export interface Distribution {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/** An append-only list of numbers backed by a growing Float64Array, so 100k samples are not 100k boxed numbers. */
export class SampleList {
  private values = new Float64Array(1024);
  private size = 0;

  get length(): number {
    return this.size;
  }

  push(value: number): void {
    if (this.size === this.values.length) {
      const grown = new Float64Array(this.values.length * 2);
      grown.set(this.values);
      this.values = grown;
    }
    this.values[this.size++] = value;
  }

  append(other: SampleList): void {
    for (const value of other.view()) this.push(value);
  }

  /** The samples recorded so far (a view, not a copy: do not keep it across pushes). */
  view(): Float64Array {
    return this.values.subarray(0, this.size);
  }
}

/**
 * Percentile by linear interpolation between the two closest ranks (the "R-7" definition spreadsheets use),
 * so p99 of a small round does not jump straight to the maximum.
 */
export function percentile(sorted: Float64Array, fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = fraction * (sorted.length - 1);
  const lower = Math.floor(rank);
  const upper = Math.min(lower + 1, sorted.length - 1);
  const low = sorted[lower] ?? Number.NaN;
  const high = sorted[upper] ?? Number.NaN;
  return low + (high - low) * (rank - lower);
}

/** p50/p90/p99/max of the samples; NaN everywhere when there are none. */
export function distribution(samples: SampleList): Distribution {
  const sorted = Float64Array.from(samples.view()).sort();
  return {
    count: sorted.length,
    p50: percentile(sorted, 0.5),
    p90: percentile(sorted, 0.9),
    p99: percentile(sorted, 0.99),
    max: sorted.length === 0 ? Number.NaN : (sorted[sorted.length - 1] ?? Number.NaN),
  };
}
