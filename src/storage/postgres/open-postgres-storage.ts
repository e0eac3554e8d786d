import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import type { Database } from '../database-schema.js';
import { createKyselyStorage } from '../kysely-storage.js';
import { RefuseNulTextPlugin } from '../refuse-nul-text-plugin.js';
import { runMigrations } from '../migrations/run-migrations.js';
import type { Storage } from '../types.js';
import { int8AsNumberTypes } from './int8-as-number.js';
import { KeptConnections } from './kept-connections.js';
import { PostgresBillingStore } from './postgres-billing-store.js';
import { createPostgresKeyLookup } from './postgres-key-lookup-batch.js';
import { isPostgresUniqueViolation } from './postgres-errors.js';

export interface PostgresStorageOptions {
  /** `postgres://user:password@host:port/database`. */
  connectionString: string;
  /**
   * Schema for all tables; created if missing and made the only entry of every connection's
   * search_path. Lets tests (or several deployments) share one database without seeing each other.
   * Lower-case letters, digits and underscores only, so it needs no quoting anywhere.
   */
  schema?: string;
  /** Pool size per process; the default suits one gateway instance. */
  maxConnections?: number;
  /**
   * A pooled connection failed (server restart, network), idle or in use. pg discards that connection and the
   * next query opens a new one; without a listener the error would crash the process.
   */
  onIdleConnectionError?: (error: Error) => void;
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** Opens a connection pool (verifying it can connect). Does not migrate: call `storage.migrate()`. */
export async function openPostgresStorage(options: PostgresStorageOptions): Promise<Storage> {
  const { schema } = options;
  if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
    throw new Error(`Invalid PostgreSQL schema name ${JSON.stringify(schema)}: use [a-z_][a-z0-9_]*.`);
  }
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.maxConnections ?? 10,
    types: int8AsNumberTypes(),
    // A startup parameter, so it applies to every connection the pool ever opens, before any query.
    ...(schema === undefined ? {} : { options: `-c search_path=${schema}` }),
  });
  const onConnectionError = options.onIdleConnectionError ?? (() => {});
  pool.on('error', onConnectionError);
  // A client checked out of the pool (Kysely takes one per query or transaction) has no pool listener for its
  // 'error' event: a server that restarts or a cut connection would then be an uncaught exception that ends the
  // process. The query it was running is rejected anyway, and pg-pool discards a client that is no longer
  // queryable when it is released.
  pool.on('connect', (client) => client.on('error', onConnectionError));
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }), plugins: [new RefuseNulTextPlugin()] });
  try {
    // Fail at start-up, not on the first request, when the server is unreachable or refuses us.
    if (schema !== undefined) await ensureSchema(db, schema);
    else await sql`select 1`.execute(db);
  } catch (error) {
    await db.destroy();
    throw error;
  }
  // The hot path's statements name the tables but are only prepared when first run, so they are built here, before
  // migrate(): a call made before the schema is current fails as any query would.
  const connections = new KeptConnections(pool);
  const storage = createKyselyStorage({
    dialect: 'postgres',
    db,
    isUniqueViolation: isPostgresUniqueViolation,
    migrate: () => runMigrationsHere(db, schema),
    billingStore: new PostgresBillingStore(pool, connections, db),
    findKeyWithOrganisation: createPostgresKeyLookup(connections),
  });
  const closePool = storage.close;
  // The kept connections first: ending the pool waits for every connection checked out of it.
  storage.close = () => {
    connections.close();
    return closePool();
  };
  return storage;
}

async function runMigrationsHere(db: Kysely<Database>, schema: string | undefined): Promise<string[]> {
  return runMigrations(db, { migrationTableSchema: schema ?? (await currentSchema(db)) });
}

async function ensureSchema(db: Kysely<Database>, schema: string): Promise<void> {
  try {
    await db.schema.createSchema(schema).ifNotExists().execute();
  } catch (error) {
    // Concurrent CREATE SCHEMA IF NOT EXISTS can still fail on the catalog's unique index when
    // another session creates it at the same moment; that outcome is what we wanted anyway.
    const exists = await sql<{ found: number }>`select 1 as found from pg_namespace where nspname = ${schema}`.execute(
      db,
    );
    if (exists.rows.length === 0) throw error;
  }
}

/** Where unqualified tables go: the first existing schema of the search_path (usually `public`). */
async function currentSchema(db: Kysely<Database>): Promise<string> {
  const result = await sql<{ schema: string | null }>`select current_schema() as schema`.execute(db);
  const schema = result.rows[0]?.schema;
  if (!schema) throw new Error('No schema of the search_path exists; cannot choose where to migrate.');
  return schema;
}
