/**
 * The parts of node-postgres that are not its public API and that pipelined-statements.ts drives: if an upgrade of
 * `pg` changes any of them, this fails and names it, before a pipeline silently misbehaves. `pg` is pinned to an
 * exact version in package.json for the same reason; raising the pin means re-reading these internals.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { POSTGRES_URL } from '../../../test/helpers/storage-backends.js';

const require = createRequire(import.meta.url);
/** The version the pipeline was written and checked against. */
const CHECKED_VERSION = '8.23.1';

function pgSource(file: string): string {
  return readFileSync(require.resolve(`pg/lib/${file}`), 'utf8');
}

describe('pg internals the pipeline relies on', () => {
  it(`is pg ${CHECKED_VERSION} exactly, pinned in package.json and the lock`, () => {
    const installed = JSON.parse(readFileSync(require.resolve('pg/package.json'), 'utf8')) as { version: string };
    expect(installed.version).toBe(CHECKED_VERSION);
    const manifest = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    expect(manifest.dependencies.pg).toBe(CHECKED_VERSION);
    const lock = JSON.parse(readFileSync(new URL('../../../package-lock.json', import.meta.url), 'utf8')) as {
      packages: Record<string, { version?: string; dependencies?: Record<string, string> }>;
    };
    expect(lock.packages['']?.dependencies?.pg).toBe(CHECKED_VERSION);
    expect(lock.packages['node_modules/pg']?.version).toBe(CHECKED_VERSION);
  });

  it('exports pg.utils.prepareValue and pg.DatabaseError', () => {
    const prepareValue = (pg as unknown as { utils?: { prepareValue?: unknown } }).utils?.prepareValue;
    expect(typeof prepareValue, 'pg.utils.prepareValue').toBe('function');
    expect((prepareValue as (value: unknown) => unknown)(12n)).toBe('12');
    expect(typeof pg.DatabaseError, 'pg.DatabaseError').toBe('function');
  });

  it('Connection sends the extended-protocol messages through these methods', () => {
    const prototype = (pg.Connection as unknown as { prototype: Record<string, unknown> }).prototype;
    for (const [method, arity] of [
      ['parse', 1],
      ['bind', 1],
      ['describe', 1],
      ['execute', 1],
      ['sync', 0],
      ['sendCopyFail', 1],
    ] as const) {
      expect(typeof prototype[method], `Connection.prototype.${method}`).toBe('function');
      expect(
        (prototype[method] as (...args: unknown[]) => unknown).length,
        `Connection.prototype.${method} arity`,
      ).toBe(arity);
    }
    // Constructed with its own record of parsed statement names, and the socket it corks.
    const source = pgSource('connection.js');
    expect(source, 'Connection.parsedStatements').toContain('this.parsedStatements = {}');
    expect(source, 'Connection.stream').toContain('this.stream =');
  });

  it('Client hands a submittable the connection and routes each backend message to its handler', () => {
    const source = pgSource('client.js');
    expect(source, 'Client submits an activeQuery').toContain('activeQuery.submit(this.connection)');
    for (const handler of [
      'handleRowDescription(msg)',
      'handleDataRow(msg)',
      'handleCommandComplete(msg, this.connection)',
      'handleEmptyQuery(this.connection)',
      'handleError(msg, this.connection)',
      'handleReadyForQuery(this.connection)',
      'handlePortalSuspended(this.connection)',
      'handleCopyInResponse(this.connection)',
      'handleCopyData(msg, this.connection)',
    ]) {
      expect(source, `Client calls activeQuery.${handler}`).toContain(`activeQuery.${handler}`);
    }
    // The pipeline listens to these connection events itself.
    for (const event of ['parseComplete', 'readyForQuery']) expect(source).toContain(`con.on('${event}'`);
    expect(typeof (pg.Client.prototype as unknown as Record<string, unknown>).getTypeParser).toBe('function');
  });

  describe('on a live connection', () => {
    let client: pg.Client;
    beforeAll(async () => {
      client = new pg.Client({ connectionString: POSTGRES_URL });
      await client.connect();
    });
    afterAll(() => client.end());

    it('records a named statement in connection.parsedStatements and exposes a corkable stream', async () => {
      await client.query({ name: 'pg_internals_probe', text: 'select $1::int + 1 as n', values: [1] });
      const connection = (client as unknown as { connection: Record<string, unknown> }).connection;
      expect(connection.parsedStatements).toMatchObject({ pg_internals_probe: 'select $1::int + 1 as n' });
      const stream = connection.stream as { cork?: unknown; uncork?: unknown };
      expect(typeof stream.cork).toBe('function');
      expect(typeof stream.uncork).toBe('function');
    });

    it('calls a submittable with the connection, then its handlers in protocol order', async () => {
      const calls: string[] = [];
      const done = new Promise<void>((resolve, reject) => {
        const submittable = {
          submit(connection: Record<string, (message?: unknown) => void>) {
            calls.push('submit');
            connection.parse!({ name: '', text: 'select 7 as seven', types: [] });
            connection.bind!({ portal: '', statement: '', values: [], binary: false });
            connection.describe!({ type: 'P', name: '' });
            connection.execute!({ portal: '', rows: 0 });
            connection.sync!();
            return null;
          },
          handleRowDescription: () => calls.push('rowDescription'),
          handleDataRow: (message: { fields: unknown[] }) => calls.push(`dataRow:${String(message.fields[0])}`),
          handleCommandComplete: (message: { text: string }) => calls.push(`commandComplete:${message.text}`),
          handleReadyForQuery: () => {
            calls.push('readyForQuery');
            resolve();
          },
          handleError: (error: Error) => reject(error),
          handleEmptyQuery: () => calls.push('emptyQuery'),
          handlePortalSuspended: () => calls.push('portalSuspended'),
          handleCopyInResponse: () => {},
          handleCopyData: () => {},
        };
        client.query(submittable as unknown as pg.QueryConfig);
      });
      await done;
      expect(calls).toEqual(['submit', 'rowDescription', 'dataRow:7', 'commandComplete:SELECT 1', 'readyForQuery']);
    });
  });
});
