/**
 * A sliding log of admission times for one subject: a ring buffer, oldest first.
 *
 * Why a log and not a counter: the issue asks for a strict rolling window (no 60 s interval ever admits more
 * than the limit, and a client pacing at exactly the limit is never refused). Fixed windows admit up to twice
 * the limit across a boundary and sliding-window counters only approximate; only the exact admission times give
 * both properties. rate-limiter-flexible counts fixed windows; rolling-rate-limiter (0.4, a sliding log) adds
 * refused attempts to the log, stamps them with the caller's process clock, and keeps a timer per id. Neither
 * gives the semantics, so these ~60 lines (and the Lua script in `redis-scripts.ts`) are ours.
 *
 * The buffer starts small and doubles up to the subject's limit, so memory follows what a subject actually
 * uses in a window (a key seen once costs a few bytes, not `limit` slots).
 */

const INITIAL_CAPACITY = 4;

export class AdmissionLog {
  private times: Float64Array;
  /** Index of the oldest admission still held. */
  private head = 0;
  private length = 0;

  constructor(limit: number) {
    this.times = new Float64Array(Math.min(limit, INITIAL_CAPACITY));
  }

  /** Admissions still held (call `expire` first to count only those inside the window). */
  get count(): number {
    return this.length;
  }

  /** The most recent admission time, or -Infinity when empty. */
  get newest(): number {
    return this.length === 0 ? Number.NEGATIVE_INFINITY : this.at(this.length - 1);
  }

  /** The admission at `index`, 0 being the oldest. */
  at(index: number): number {
    return this.times[(this.head + index) % this.times.length] as number;
  }

  /** Forgets admissions at or before `cutoff` (the window is the half-open interval (now − window, now]). */
  expire(cutoff: number): void {
    const capacity = this.times.length;
    while (this.length > 0 && (this.times[this.head] as number) <= cutoff) {
      this.head = (this.head + 1) % capacity;
      this.length -= 1;
    }
  }

  /**
   * Records an admission. Times are kept non-decreasing (a clock that steps back records at the newest time
   * instead) so that the oldest entry is always the first to leave: a later admission never expires earlier.
   * Returns the time actually recorded.
   */
  push(time: number, limit: number): number {
    const recorded = Math.max(time, this.newest);
    if (this.length === this.times.length) this.grow(Math.min(limit, this.times.length * 2));
    this.times[(this.head + this.length) % this.times.length] = recorded;
    this.length += 1;
    return recorded;
  }

  private grow(capacity: number): void {
    // Callers push only below the limit, so capacity is never below length + 1; the guard keeps that explicit.
    const next = new Float64Array(Math.max(capacity, this.length + 1));
    for (let index = 0; index < this.length; index += 1) next[index] = this.at(index);
    this.times = next;
    this.head = 0;
  }
}
