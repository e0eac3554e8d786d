import { describeDatabaseUrl, parseDatabaseUrl } from './database-url.js';
import type { Storage } from './types.js';

export { describeDatabaseUrl, parseDatabaseUrl, type DatabaseTarget } from './database-url.js';

export interface OpenStorageOptions {
  /** PostgreSQL only: keep every table in this schema (created if missing). Ignored for SQLite. */
  postgresSchema?: string;
  /**
   * Failures of work storage does in the background, which no caller awaits: SQLite's checkpoint thread,
   * PostgreSQL's idle pooled connections. Each is recovered from; this only reports them.
   */
  onBackgroundError?: (error: Error) => void;
  /**
   * A gateway's: SQLite only, the file is locked for this process (its live holds are in its memory) and a second
   * gateway on it is refused. CLI admin commands leave it unset.
   */
  owner?: boolean;
}

/**
 * Opens the storage a DATABASE_URL names (see `parseDatabaseUrl` for the accepted forms).
 * Does not migrate: the caller decides when (`storage.migrate()`), e.g. `tollgate migrate` or start-up.
 *
 * Each backend's module (and its driver: pg, better-sqlite3) is imported only when the URL names it: an
 * embedded SQLite gateway never pays the memory of the PostgreSQL driver, nor the reverse.
 */
export async function openStorage(databaseUrl: string, options: OpenStorageOptions = {}): Promise<Storage> {
  const target = parseDatabaseUrl(databaseUrl);
  try {
    if (target.kind === 'sqlite') {
      const { openSqliteStorage } = await import('./sqlite/open-sqlite-storage.js');
      return await openSqliteStorage(target.filename, options.onBackgroundError, undefined, options.owner === true);
    }
    const { openPostgresStorage } = await import('./postgres/open-postgres-storage.js');
    return await openPostgresStorage({
      connectionString: target.connectionString,
      ...(options.postgresSchema === undefined ? {} : { schema: options.postgresSchema }),
      ...(options.onBackgroundError === undefined ? {} : { onIdleConnectionError: options.onBackgroundError }),
    });
  } catch (error) {
    // Driver errors rarely say which database they were about; add it, without the password.
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`Cannot open ${describeDatabaseUrl(databaseUrl)}: ${reason}`, { cause: error });
  }
}
