/**
 * The simulator's prompt-cache memory: entries named by a scope (vendor, API key, model, routing key) and the hash
 * of an exact prompt prefix, each holding the prefix's token count until it expires. Expiry reads the clock
 * (`Date.now` unless a test passes its own), so a faked system clock ages the cache like a real one. Bounded: past
 * `maxEntries` the least recently used entry goes, so a long-running simulator never grows without end.
 */

export interface PromptCacheStoreOptions {
  /** Most entries kept; the least recently used go first. Defaults to 50,000 (a few MB). */
  maxEntries?: number;
  /** Milliseconds since the epoch; defaults to Date.now. */
  clock?: () => number;
}

interface Entry {
  tokens: number;
  lifetimeMs: number;
  expiresAt: number;
}

export const DEFAULT_MAX_ENTRIES = 50_000;

export class PromptCacheStore {
  /** Insertion order is recency order: a touched entry is deleted and set again at the end. */
  private readonly entries = new Map<string, Entry>();
  readonly maxEntries: number;
  private readonly clock: () => number;

  constructor(options: PromptCacheStoreOptions = {}) {
    this.maxEntries = Math.max(1, options.maxEntries ?? DEFAULT_MAX_ENTRIES);
    this.clock = options.clock ?? Date.now;
  }

  now(): number {
    return this.clock();
  }

  get size(): number {
    return this.entries.size;
  }

  /** The prefix's cached token count, or undefined when it is not cached (or has expired, which forgets it). */
  peek(key: string): number | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt <= this.clock()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.tokens;
  }

  /** A hit: the entry lives its full lifetime again from now, and becomes the most recently used. */
  refresh(key: string): void {
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    this.entries.delete(key);
    entry.expiresAt = this.clock() + entry.lifetimeMs;
    this.entries.set(key, entry);
  }

  /** Caches a prefix for `lifetimeMs`; an entry already there keeps the longer of the two lifetimes. */
  write(key: string, tokens: number, lifetimeMs: number): void {
    const now = this.clock();
    const before = this.entries.get(key);
    if (before !== undefined) this.entries.delete(key);
    const lifetime = Math.max(lifetimeMs, before !== undefined && before.expiresAt > now ? before.lifetimeMs : 0);
    this.entries.set(key, { tokens, lifetimeMs: lifetime, expiresAt: now + lifetime });
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (oldest.done === true) break;
      this.entries.delete(oldest.value);
    }
  }
}
