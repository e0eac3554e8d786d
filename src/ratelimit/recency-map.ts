/**
 * A Map kept in order of last write, whose entries say when they become useless (`idleAt`).
 *
 * Why this shape: a JS Map iterates in insertion order, so re-inserting on every write keeps the least recently
 * written entry first. With one window length for every subject (the normal case: a minute), the first entry is
 * also the first to go idle, so eviction only ever looks at the front and costs O(evicted), not a scan of every
 * subject. Mixed window lengths still evict correctly, only later: a long-window entry at the front holds back
 * the ones behind it until it goes idle itself, so the map holds at most the subjects written within the
 * longest window in use.
 */
export interface Expiring {
  /** The instant from which the entry holds nothing that still counts; dropping it then loses nothing. */
  idleAt: number;
}

export class RecencyMap<Value extends Expiring> {
  private readonly entries = new Map<string, Value>();

  get size(): number {
    return this.entries.size;
  }

  get(key: string): Value | undefined {
    return this.entries.get(key);
  }

  /** Stores `value` as the most recently written entry. */
  touch(key: string, value: Value): void {
    this.entries.delete(key);
    this.entries.set(key, value);
  }

  /** Drops idle entries from the front, at most `max` of them; returns how many were dropped. */
  evictIdle(now: number, max = Number.POSITIVE_INFINITY): number {
    let evicted = 0;
    for (const [key, value] of this.entries) {
      if (evicted >= max || value.idleAt > now) break;
      this.entries.delete(key);
      evicted += 1;
    }
    return evicted;
  }

  clear(): void {
    this.entries.clear();
  }
}
