import {
  KEY_COLUMNS,
  KEY_LOOKUP_COLUMNS,
  KEY_PROJECT_JOIN,
  KEY_LOOKUP_WIDTH,
  keyWithOrganisationRow,
  toApiKeyWithOrganisation,
} from '../api-key-repository.js';
import { toLockedAccount, type AccountMoneyRow } from '../billing-rules.js';
import type { ApiKeyWithOrganisation } from '../types.js';
import type { KeptConnections } from './kept-connections.js';
import { runStatement } from './pipelined-statements.js';

/**
 * Key lookups of one event-loop turn as one query: under load many requests arrive in the same turn,
 * and each needs its key and its organisation's money, a plain read without locks. One `key_hash = any($1)` read per
 * turn answers them all, in one round trip. Nothing is cached: every request still reads its key as the database
 * has it then, so a revoked or changed key is refused from its next request, as before.
 *
 * Rows come back as arrays of the columns in the lookup's order (its caller maps them to named fields): an object
 * row of ~30 columns built name by name is slow to build and to read (V8 keeps such an object as a dictionary).
 */
const MAX_KEYS = 256;

/** A row of the lookup: the columns' values in the order the statement selects them. Shared: read it, do not change it. */
export type KeyLookupRow = readonly unknown[];

interface Waiting {
  resolve(row: KeyLookupRow | undefined): void;
  reject(error: unknown): void;
}

export class PostgresKeyLookupBatcher {
  private waiting = new Map<string, Waiting[]>();
  private scheduled = false;

  /**
   * @param text the lookup, with `$1` the array of key hashes
   * @param hashColumn the position of `key_hash` among its columns
   */
  constructor(
    private readonly connections: KeptConnections,
    private readonly text: string,
    private readonly hashColumn: number,
  ) {}

  find(keyHash: string): Promise<KeyLookupRow | undefined> {
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
    let rows: KeyLookupRow[];
    try {
      const result = await runStatement(this.connections, {
        name: 'tollgate_find_keys',
        text: this.text,
        values: [[...batch.keys()]],
        arrayRows: true,
      });
      rows = result.rows as unknown as KeyLookupRow[];
    } catch (error) {
      for (const list of batch.values()) for (const waiting of list) waiting.reject(error);
      return;
    }
    const byHash = new Map(rows.map((row) => [String(row[this.hashColumn]), row]));
    for (const [hash, list] of batch) {
      const row = byHash.get(hash);
      for (const waiting of list) waiting.resolve(row);
    }
  }
}

/**
 * The request path's key lookup on PostgreSQL: the key and its organisation, with the organisation's money read in the same round
 * trip (the admission's hint, ReserveInput.accountHint), batched per event-loop turn.
 */
export function createPostgresKeyLookup(
  connections: KeptConnections,
): (keyHash: string) => Promise<ApiKeyWithOrganisation | null> {
  const keys = new PostgresKeyLookupBatcher(connections, FIND_KEYS, FIND_KEYS_HASH_COLUMN);
  return async (keyHash) => {
    const columns = await keys.find(keyHash);
    if (columns === undefined) return null;
    return {
      ...toApiKeyWithOrganisation(keyWithOrganisationRow(columns)),
      money: toLockedAccount(accountMoneyOf(columns)),
    };
  };
}

/**
 * The key rows for the key hashes of one event-loop turn ($1 text[]): one round trip however many requests arrive
 * together. Read as arrays (postgres-key-lookup-batch.ts): KEY_LOOKUP_COLUMNS, then the organisation's money.
 */
const FIND_KEYS = `
  select ${KEY_LOOKUP_COLUMNS},
    cast(o.balance_nano as text), cast(o.reserved_nano as text), o.free_day, o.free_used_tokens, o.free_reserved_tokens
  from api_keys k join organisations o on o.id = k.account_id ${KEY_PROJECT_JOIN}
  where k.key_hash = any($1::text[])`;

/** Where FIND_KEYS selects `key_hash`. */
const FIND_KEYS_HASH_COLUMN = KEY_COLUMNS.indexOf('key_hash');

/** The organisation's money columns of a FIND_KEYS row, which follow KEY_LOOKUP_COLUMNS. */
function accountMoneyOf(v: KeyLookupRow): AccountMoneyRow {
  const at = KEY_LOOKUP_WIDTH;
  return {
    balance: v[at] as string,
    reserved: v[at + 1] as string,
    free_day: v[at + 2] as number | string,
    free_used_tokens: v[at + 3] as number | string,
    free_reserved_tokens: v[at + 4] as number | string,
  };
}
