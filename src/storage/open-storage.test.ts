import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { ALL_MIGRATIONS } from '../../test/helpers/storage-backends.js';
import { describeDatabaseUrl, openStorage, parseDatabaseUrl } from './open-storage.js';

const POSTGRES_URL = process.env.TOLLGATE_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

describe('parseDatabaseUrl', () => {
  it.each([
    ['postgres://u:p@db:5432/app', { kind: 'postgres', connectionString: 'postgres://u:p@db:5432/app' }],
    ['postgresql://db/app', { kind: 'postgres', connectionString: 'postgresql://db/app' }],
    [':memory:', { kind: 'sqlite', filename: ':memory:' }],
    ['sqlite::memory:', { kind: 'sqlite', filename: ':memory:' }],
    ['sqlite:./data/tollgate.db', { kind: 'sqlite', filename: './data/tollgate.db' }],
    ['sqlite:///var/lib/tollgate.db', { kind: 'sqlite', filename: '/var/lib/tollgate.db' }],
    ['file:data/tollgate.db', { kind: 'sqlite', filename: 'data/tollgate.db' }],
    ['file:///var/lib/my%20tollgate.db', { kind: 'sqlite', filename: '/var/lib/my tollgate.db' }],
    ['./data/tollgate.db', { kind: 'sqlite', filename: './data/tollgate.db' }],
    ['/abs/tollgate.db', { kind: 'sqlite', filename: '/abs/tollgate.db' }],
  ])('%s', (url, expected) => {
    expect(parseDatabaseUrl(url)).toEqual(expected);
  });

  it('refuses empty URLs and unknown schemes', () => {
    expect(() => parseDatabaseUrl('  ')).toThrow(/empty/);
    expect(() => parseDatabaseUrl('sqlite:')).toThrow(/no file/);
    expect(() => parseDatabaseUrl('mysql://db/app')).toThrow(/Unsupported database URL scheme "mysql:"/);
  });
});

describe('describeDatabaseUrl', () => {
  it('masks passwords, in the user part and in parameters', () => {
    expect(describeDatabaseUrl('postgres://app:s3cret@db:5432/tollgate?sslmode=require&password=other')).toBe(
      'postgres://app:***@db:5432/tollgate?sslmode=require&password=***',
    );
    expect(describeDatabaseUrl('postgres://app@db/tollgate')).toBe('postgres://app@db/tollgate');
    expect(describeDatabaseUrl('sqlite:./data/tollgate.db')).toBe('sqlite:./data/tollgate.db');
    expect(describeDatabaseUrl('')).toBe('(invalid database URL)');
  });
});

describe('openStorage', () => {
  it('opens an in-memory SQLite database that migrates', async () => {
    const storage = await openStorage(':memory:');
    try {
      expect(storage.dialect).toBe('sqlite');
      expect(await storage.migrate()).toEqual(ALL_MIGRATIONS);
    } finally {
      await storage.close();
      await storage.close(); // closing twice is harmless
    }
  });

  it('puts a SQLite file in WAL mode', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'tollgate-open-'));
    const file = join(directory, 'tollgate.db');
    try {
      const storage = await openStorage(`file:${file}`);
      await storage.migrate();
      await storage.close();
      const database = new BetterSqlite3(file, { readonly: true });
      expect(database.pragma('journal_mode', { simple: true })).toBe('wal');
      database.close();
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });

  it('keeps PostgreSQL tables in the requested schema and leaves the global int8 parser alone', async () => {
    const schema = `tollgate_test_${randomBytes(6).toString('hex')}`;
    const storage = await openStorage(POSTGRES_URL, { postgresSchema: schema });
    const client = new pg.Client({ connectionString: POSTGRES_URL });
    await client.connect();
    try {
      expect(storage.dialect).toBe('postgres');
      await storage.migrate();
      const tables = await client.query<{ table_name: string }>(
        'select table_name from information_schema.tables where table_schema = $1 order by table_name',
        [schema],
      );
      expect(tables.rows.map((row) => row.table_name)).toEqual([
        'account_tokens',
        'accounts',
        'alert_deliveries',
        'alert_firings',
        'alert_rules',
        'api_keys',
        'audit_events',
        'catalog_entries',
        'catalog_revisions',
        'export_cursors',
        'identity_challenges',
        'ledger_entries',
        'login_failures',
        'organisation_invitations',
        'organisation_members',
        'organisations',
        'passkeys',
        'projects',
        'recovery_codes',
        'redemption_codes',
        'reservations',
        'sessions',
        'spend_limit_holds',
        'spend_limits',
        'sso_identities',
        'stored_responses',
        'tollgate_migrations',
        'tollgate_migrations_lock',
        'totp_factors',
        'usage_daily',
        'usage_records',
      ]);
      const globalInt8 = await client.query<{ value: unknown }>('select 9007199254740993::int8 as value');
      expect(globalInt8.rows[0]?.value).toBe('9007199254740993');
    } finally {
      await storage.close();
      await client.query(`drop schema if exists ${schema} cascade`);
      await client.end();
    }
  });

  it('refuses unsafe schema names', async () => {
    await expect(openStorage(POSTGRES_URL, { postgresSchema: 'x; drop table y' })).rejects.toThrow(
      /Invalid PostgreSQL schema name/,
    );
  });

  it('names the database, without its password, when it cannot connect', async () => {
    const error: unknown = await openStorage('postgres://app:s3cret@127.0.0.1:1/none').catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/^Cannot open postgres:\/\/app:\*\*\*@127\.0\.0\.1:1\/none: /);
    expect((error as Error).message).not.toContain('s3cret');
  });
});
