/**
 * The two storage set-ups the bench measures: the embedded default (SQLite file, in-process rate limiter)
 * and the scale-out one (PostgreSQL in a fresh schema, dropped afterwards, plus Redis for rate limits).
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';

export type BackendName = 'sqlite' | 'postgres';

export interface Backend {
  name: BackendName;
  /** For the report: "SQLite, in-process limits" or "PostgreSQL + Redis". */
  label: string;
  /** Settings every gateway and CLI process of this backend gets. */
  env: Record<string, string>;
  /** Settings that send the database and Redis traffic through the given local ports instead (round-trip count). */
  envThrough?(postgresPort: number, redisPort: number): Record<string, string>;
  postgres?: { host: string; port: number };
  redis?: { host: string; port: number };
  drop(): Promise<void>;
}

export const BENCH_POSTGRES_URL = process.env.TOLLGATE_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const BENCH_REDIS_URL = process.env.TOLLGATE_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

export function sqliteBackend(directory: string): Backend {
  return {
    name: 'sqlite',
    label: 'SQLite, in-process limits',
    env: { DATABASE_URL: `sqlite:${join(directory, 'bench.db')}` },
    drop: async () => {},
  };
}

/** With search_path in the connection string every gateway and CLI process of the run uses the bench's schema. */
function withSchema(url: URL, schema: string): string {
  const copy = new URL(url);
  copy.searchParams.set('options', `-c search_path=${schema}`);
  return copy.toString();
}

/** A fresh schema and a reachable Redis, or the reason the PostgreSQL + Redis run cannot happen. */
export async function postgresBackend(): Promise<Backend | string> {
  const databaseUrl = new URL(BENCH_POSTGRES_URL);
  const redisUrl = new URL(BENCH_REDIS_URL);
  const schema = `tollgate_bench_${randomBytes(5).toString('hex')}`;
  const client = new pg.Client({ connectionString: BENCH_POSTGRES_URL, connectionTimeoutMillis: 3_000 });
  try {
    await client.connect();
    // The name is generated above from hex digits only; identifiers cannot be bound parameters.
    await client.query(`create schema ${schema}`);
  } catch (error) {
    return `PostgreSQL at ${databaseUrl.host} not usable: ${error instanceof Error ? error.message : String(error)}`;
  } finally {
    await client.end().catch(() => {});
  }
  const redis = new Redis(BENCH_REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 2_000 });
  try {
    await redis.connect();
    await redis.ping();
  } catch (error) {
    await dropSchema(schema);
    return `Redis at ${redisUrl.host} not reachable: ${error instanceof Error ? error.message : String(error)}`;
  } finally {
    redis.disconnect();
  }
  const postgres = { host: databaseUrl.hostname, port: Number(databaseUrl.port || 5432) };
  const redisAddress = { host: redisUrl.hostname, port: Number(redisUrl.port || 6379) };
  return {
    name: 'postgres',
    label: 'PostgreSQL + Redis',
    env: { DATABASE_URL: withSchema(databaseUrl, schema), REDIS_URL: BENCH_REDIS_URL },
    envThrough(postgresPort, redisPort) {
      const viaPostgres = new URL(databaseUrl);
      viaPostgres.hostname = '127.0.0.1';
      viaPostgres.port = String(postgresPort);
      const viaRedis = new URL(redisUrl);
      viaRedis.hostname = '127.0.0.1';
      viaRedis.port = String(redisPort);
      return { DATABASE_URL: withSchema(viaPostgres, schema), REDIS_URL: viaRedis.toString() };
    },
    postgres,
    redis: redisAddress,
    drop: () => dropSchema(schema),
  };
}

/**
 * A fresh database of its own (the scale-out mode), so its backend processes can be told from other users' by the
 * database name in their command line (`postgres: user database host(port) state`); dropped afterwards.
 */
export async function postgresDatabaseBackend(): Promise<(Backend & { database: string }) | string> {
  const serverUrl = new URL(BENCH_POSTGRES_URL);
  const database = `tollgate_bench_${randomBytes(5).toString('hex')}`;
  const client = new pg.Client({ connectionString: BENCH_POSTGRES_URL, connectionTimeoutMillis: 3_000 });
  try {
    await client.connect();
    // The name is generated above from hex digits only; identifiers cannot be bound parameters.
    await client.query(`create database ${database}`);
  } catch (error) {
    return `PostgreSQL at ${serverUrl.host} not usable: ${error instanceof Error ? error.message : String(error)}`;
  } finally {
    await client.end().catch(() => {});
  }
  const redis = new Redis(BENCH_REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 2_000 });
  const drop = async () => {
    const admin = new pg.Client({ connectionString: BENCH_POSTGRES_URL, connectionTimeoutMillis: 3_000 });
    try {
      await admin.connect();
      await admin.query(`drop database if exists ${database} with (force)`);
    } finally {
      await admin.end().catch(() => {});
    }
  };
  try {
    await redis.connect();
    await redis.ping();
  } catch (error) {
    await drop();
    return `Redis at ${new URL(BENCH_REDIS_URL).host} not reachable: ${error instanceof Error ? error.message : String(error)}`;
  } finally {
    redis.disconnect();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return {
    name: 'postgres',
    label: 'PostgreSQL + Redis',
    database,
    env: { DATABASE_URL: url.toString(), REDIS_URL: BENCH_REDIS_URL },
    drop,
  };
}

async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: BENCH_POSTGRES_URL, connectionTimeoutMillis: 3_000 });
  try {
    await client.connect();
    await client.query(`drop schema if exists ${schema} cascade`);
  } finally {
    await client.end().catch(() => {});
  }
}
