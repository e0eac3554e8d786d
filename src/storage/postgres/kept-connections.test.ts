/**
 * The hot path's kept connections on the real PostgreSQL: reused between statements, never shared by two
 * at once, discarded when broken, given back when they end while free, and released by close so the pool can end.
 */
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { POSTGRES_URL } from '../../../test/helpers/storage-backends.js';
import { isStorageUnavailable } from '../storage-unavailable.js';
import { KeptConnections } from './kept-connections.js';
import { runStatement } from './pipelined-statements.js';

const pools: pg.Pool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.end()));
});

function newPool(): pg.Pool {
  const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 4 });
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  pools.push(pool);
  return pool;
}

const backendPid = { name: 'kept_backend_pid', text: 'select pg_backend_pid() as pid', values: [] };
async function pidOf(connections: KeptConnections): Promise<number> {
  return Number((await runStatement(connections, backendPid)).rows[0]!.pid);
}

describe('KeptConnections', () => {
  it('keeps one connection for statements one after the other, and gives each of two at once its own', async () => {
    const pool = newPool();
    const connections = new KeptConnections(pool);
    const first = await pidOf(connections);
    expect(await pidOf(connections)).toBe(first);
    expect(pool.idleCount).toBe(0); // kept, not returned to the pool
    const [a, b] = await Promise.all([pidOf(connections), pidOf(connections)]);
    expect(a).not.toBe(b);
    expect([a, b]).toContain(first);
    connections.close();
    expect(pool.totalCount).toBe(2);
    expect(pool.idleCount).toBe(2);
  });

  it("keeps a connection after the server's refusal, and discards one that failed otherwise", async () => {
    const pool = newPool();
    const connections = new KeptConnections(pool);
    const first = await pidOf(connections);
    await expect(runStatement(connections, { name: '', text: 'select 1/0', values: [] })).rejects.toBeInstanceOf(
      pg.DatabaseError,
    );
    expect(await pidOf(connections)).toBe(first);
    // Terminated while in use: the statement fails as an outage and the connection is not kept.
    const killed = runStatement(connections, {
      name: '',
      text: 'select pg_terminate_backend(pg_backend_pid())',
      values: [],
    });
    await expect(killed).rejects.toSatisfy(isStorageUnavailable);
    expect(await pidOf(connections)).not.toBe(first);
    connections.close();
  });

  it('gives back a connection that ends while free, so the next statement gets a fresh one and succeeds', async () => {
    const pool = newPool();
    const connections = new KeptConnections(pool);
    const first = await pidOf(connections);
    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    try {
      await admin.query('select pg_terminate_backend($1)', [first]);
    } finally {
      await admin.end();
    }
    await expect.poll(() => pool.totalCount).toBe(0);
    expect(await pidOf(connections)).not.toBe(first);
    connections.close();
  });

  it('gives its connection to a query waiting on the full pool instead of keeping it', async () => {
    const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 1 });
    pools.push(pool);
    const connections = new KeptConnections(pool);
    const slow = runStatement(connections, { name: '', text: 'select pg_sleep(0.05)', values: [] });
    await expect.poll(() => pool.totalCount).toBe(1);
    const waiting = pool.query('select 1 as n');
    await slow;
    expect((await waiting).rows).toEqual([{ n: 1 }]);
    connections.close();
  });

  it('gives a connection left free for a while back to the pool', async () => {
    const pool = newPool();
    const connections = new KeptConnections(pool, 4, 50);
    const first = await pidOf(connections);
    expect(pool.idleCount).toBe(0);
    await expect.poll(() => pool.idleCount, { timeout: 2_000 }).toBe(1);
    // Checked out again from the pool (the same connection, idle there), and kept again.
    expect(await pidOf(connections)).toBe(first);
    expect(pool.idleCount).toBe(0);
    connections.close();
  });

  it('lets the pool end once closed, also when a statement was running during close', async () => {
    const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 4 });
    const connections = new KeptConnections(pool);
    await pidOf(connections);
    const running = runStatement(connections, { name: '', text: 'select pg_sleep(0.05)', values: [] });
    connections.close();
    await running;
    await pool.end();
    expect(pool.totalCount).toBe(0);
  });
});
