import type { Database as BetterSqliteDatabase, Statement } from 'better-sqlite3';
import {
  ORGANISATION_LOOKUP_COLUMNS,
  PROJECT_LOOKUP_COLUMNS,
  KEY_PROJECT_JOIN,
  KEY_COLUMNS,
  keyLimitsSql,
  keyWithOrganisationRow,
  toApiKeyWithOrganisation,
} from '../api-key-repository.js';
import type { ApiKeyWithOrganisation } from '../types.js';

/**
 * The request path's key lookup on SQLite: one prepared statement run synchronously. While Kysely holds the handle in
 * a transaction of its own (a key rotation, say), a synchronous read would see that transaction's uncommitted rows, so
 * the lookup then goes through Kysely's (`viaKysely`), which waits for the handle like any other query. The statement is
 * prepared on first use (it needs the tables, which `storage.migrate()` creates).
 */
export function createSqliteKeyLookup(
  database: BetterSqliteDatabase,
  viaKysely: (keyHash: string) => Promise<ApiKeyWithOrganisation | null>,
): (keyHash: string) => Promise<ApiKeyWithOrganisation | null> {
  let findKey: Statement | undefined;
  return async (keyHash) => {
    if (database.inTransaction) return viaKysely(keyHash);
    // The key lookup's ~22 columns come back as one JSON array text, parsed here: better-sqlite3 makes an array row by
    // setting each element through V8's generic property path from C++ (~900 instructions a column under callgrind, on
    // top of the value itself), so one string and one JSON.parse cost less than the columns did (~12k instructions per
    // lookup). The money columns go as text, so the JSON holds them exactly.
    findKey ??= database
      .prepare(`
      select json_array(${KEY_LOOKUP_JSON_COLUMNS})
      from api_keys k join organisations o on o.id = k.account_id ${KEY_PROJECT_JOIN}
      where k.key_hash = ?`)
      .pluck(true);
    const text = findKey.get(keyHash) as string | undefined;
    return text === undefined ? null : toApiKeyWithOrganisation(keyWithOrganisationRow(JSON.parse(text) as unknown[]));
  };
}

/** KEY_COLUMNS, ORGANISATION_LOOKUP_COLUMNS, PROJECT_LOOKUP_COLUMNS and the key's limits (as text: money exact past 2^53) as json_array's arguments. */
const KEY_LOOKUP_JSON_COLUMNS = [
  ...KEY_COLUMNS.map((column) => `k.${column}`),
  ...ORGANISATION_LOOKUP_COLUMNS.map((column) => `o.${column}`),
  ...PROJECT_LOOKUP_COLUMNS.map((column) => `p.${column}`),
  keyLimitsSql('k', 'sqlite'),
].join(', ');
