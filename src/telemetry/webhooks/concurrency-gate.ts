/**
 * At most `limit` tasks at once, the rest waiting in arrival order. Hand-written because it is a dozen lines and the
 * libraries that do it (p-limit) are not dependencies of the gateway.
 */
export class ConcurrencyGate {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly limit: number) {
    if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError('A concurrency limit is a positive integer.');
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running += 1;
    try {
      return await task();
    } finally {
      // The slot passes straight to the next waiter (the count stays), or is freed.
      const next = this.waiting.shift();
      if (next === undefined) this.running -= 1;
      else next();
    }
  }
}
