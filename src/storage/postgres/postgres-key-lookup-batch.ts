import type pg from 'pg';

/**
 * Key lookups of one event-loop turn as one query (issue 22): under load many requests arrive in the same turn,
 * and each needs its key and its account's money, a plain read without locks. One `key_hash = any($1)` read per
 * turn answers them all, in one round trip. Nothing is cached: every request still reads its key as the database
 * has it then, so a revoked or changed key is refused from its next request, as before.
 */
const MAX_KEYS = 256;

interface Waiting {
  resolve(row: Record<string, unknown> | undefined): void;
  reject(error: unknown): void;
}

export class PostgresKeyLookupBatcher {
  private waiting = new Map<string, Waiting[]>();
  private scheduled = false;

  /** @param text the lookup, with `$1` the array of key hashes; each row carries its `key_hash`. */
  constructor(
    private readonly pool: pg.Pool,
    private readonly text: string,
  ) {}

  find(keyHash: string): Promise<Record<string, unknown> | undefined> {
    return new Promise((resolve, reject) => {
      const list = this.waiting.get(keyHash);
      if (list === undefined) this.waiting.set(keyHash, [{ resolve, reject }]);
      else list.push({ resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    while (this.waiting.size > 0) {
      const batch = new Map<string, Waiting[]>();
      for (const [hash, list] of this.waiting) {
        if (batch.size === MAX_KEYS) break;
        batch.set(hash, list);
      }
      for (const hash of batch.keys()) this.waiting.delete(hash);
      void this.send(batch);
    }
  }

  private async send(batch: Map<string, Waiting[]>): Promise<void> {
    let rows: Record<string, unknown>[];
    try {
      const result = await this.pool.query<Record<string, unknown>>({ name: 'tollgate_find_keys', text: this.text, values: [[...batch.keys()]] });
      rows = result.rows;
    } catch (error) {
      for (const list of batch.values()) for (const waiting of list) waiting.reject(error);
      return;
    }
    const byHash = new Map(rows.map((row) => [String(row.key_hash), row]));
    for (const [hash, list] of batch) {
      // Each caller gets its own copy: callers may keep or change what they are given.
      for (const waiting of list) {
        const row = byHash.get(hash);
        waiting.resolve(row === undefined ? undefined : { ...row });
      }
    }
  }
}
