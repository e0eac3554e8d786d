/**
 * The two storage backends the contract suites run against: SQLite in a temp file and the real local
 * PostgreSQL in a fresh random schema (dropped afterwards). PostgreSQL is required: if it is unreachable the
 * suites fail, they are never skipped. Point TOLLGATE_TEST_POSTGRES_URL elsewhere if needed.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { openStorage } from '../../src/storage/open-storage.js';
import type { Storage } from '../../src/storage/types.js';

export const POSTGRES_URL = process.env.TOLLGATE_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const ALL_MIGRATIONS = ['0001-initial', '0002-billing'];

/** A fresh, empty database that any number of storage handles can open. */
export interface TestDatabase {
  open(): Promise<Storage>;
  /** Runs `migrate()` from `count` independent sessions at once; resolves to each one's result. */
  migrateConcurrently(count: number): Promise<string[][]>;
  drop(): Promise<void>;
}

export interface Backend {
  name: Storage['dialect'];
  createDatabase(): Promise<TestDatabase>;
}

export const sqliteBackend: Backend = {
  name: 'sqlite',
  async createDatabase() {
    const directory = await mkdtemp(join(tmpdir(), 'tollgate-storage-'));
    const url = `sqlite:${join(directory, 'nested', 'tollgate.db')}`;
    return {
      open: () => openStorage(url),
      // Separate processes: better-sqlite3 waits for locks synchronously, so handles in one process
      // cannot wait for each other, and processes are what the guarantee is about anyway.
      migrateConcurrently(count) {
        // Process start-up jitter dwarfs a migration's few milliseconds; a shared start time makes them overlap.
        const startAt = Date.now() + 2_000;
        return Promise.all(Array.from({ length: count }, () => migrateInChildProcess(url, startAt)));
      },
      drop: () => rm(directory, { recursive: true, force: true }),
    };
  },
};

export const postgresBackend: Backend = {
  name: 'postgres',
  async createDatabase() {
    const schema = `tollgate_test_${randomBytes(6).toString('hex')}`;
    const open = () => openStorage(POSTGRES_URL, { postgresSchema: schema });
    return {
      open,
      // Each storage has its own pool, hence its own server sessions: that is what the advisory lock sees.
      async migrateConcurrently(count) {
        const storages = await Promise.all(Array.from({ length: count }, open));
        try {
          return await Promise.all(storages.map((storage) => storage.migrate()));
        } finally {
          await Promise.all(storages.map((storage) => storage.close()));
        }
      },
      async drop() {
        const client = new pg.Client({ connectionString: POSTGRES_URL });
        await client.connect();
        await client.query(`drop schema if exists ${schema} cascade`).finally(() => client.end());
      },
    };
  },
};

const execFileAsync = promisify(execFile);
const openStoragePath = fileURLToPath(new URL('../../src/storage/open-storage.ts', import.meta.url));
const viteNodePath = fileURLToPath(new URL('../../node_modules/vite-node/vite-node.mjs', import.meta.url));

async function migrateInChildProcess(url: string, startAt: number): Promise<string[]> {
  const directory = await mkdtemp(join(tmpdir(), 'tollgate-migrate-child-'));
  const script = join(directory, 'migrate.ts');
  await writeFile(script, [
    `import { openStorage } from ${JSON.stringify(openStoragePath)};`,
    `const storage = await openStorage(${JSON.stringify(url)});`,
    `await new Promise((resolve) => setTimeout(resolve, ${startAt} - Date.now()));`,
    `try { process.stdout.write(JSON.stringify(await storage.migrate())); } finally { await storage.close(); }`,
  ].join('\n'));
  const run = execFileAsync(process.execPath, [viteNodePath, script], { timeout: 30_000 });
  const { stdout } = await run.finally(() => rm(directory, { recursive: true, force: true }));
  return JSON.parse(stdout) as string[];
}

