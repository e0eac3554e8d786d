import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { isStorageUnavailable } from '../storage-unavailable.js';
import { int8AsNumberTypes } from './int8-as-number.js';
import { runPipelined, type PipelinedResult, type PipelinedStatement } from './pipelined-statements.js';

const POSTGRES_URL = process.env.TOLLGATE_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

let admin: pg.Client;
let schema: string;
let clients: pg.Client[] = [];

/** A client whose search_path is this test's own schema; 'error' events (lost connections) are expected in some tests. */
async function connect(config: pg.ClientConfig = {}): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: POSTGRES_URL, options: `-c search_path=${schema}`, ...config });
  client.on('error', () => {});
  clients.push(client);
  await client.connect();
  return client;
}

/** Names of the Parse messages the client sends from now on (pg's own named queries included). */
function countParses(client: pg.Client): string[] {
  const connection = client.connection;
  const parse = connection.parse.bind(connection);
  const names: string[] = [];
  connection.parse = (query, more) => {
    names.push(query.name ?? '');
    parse(query, more);
  };
  return names;
}

/** How many Describe messages the client sends from now on. */
function countDescribes(client: pg.Client): { count: number } {
  const connection = client.connection as unknown as { describe(message: unknown): void };
  const describe = connection.describe.bind(connection);
  const counted = { count: 0 };
  connection.describe = (message) => {
    counted.count++;
    describe(message);
  };
  return counted;
}

function expectOk(result: PipelinedResult): pg.QueryResult[] {
  if (!result.ok) throw new Error(`pipeline failed at ${result.failedIndex}: ${result.error.message}`);
  return result.results;
}

beforeAll(async () => {
  admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
});
afterAll(() => admin.end());

beforeEach(async () => {
  schema = `pipelined_${randomBytes(6).toString('hex')}`;
  await admin.query(`CREATE SCHEMA ${schema}`);
});
afterEach(async () => {
  await Promise.all(clients.map((client) => client.end().catch(() => {})));
  clients = [];
  await admin.query(`DROP SCHEMA ${schema} CASCADE`);
});

describe('runPipelined', () => {
  it('runs every statement behind one Sync and returns each result in order, parsed as client.query parses it', async () => {
    const client = await connect();
    await client.query('CREATE TABLE item (id bigint PRIMARY KEY, qty integer NOT NULL, note text)');
    const shapesText =
      'SELECT $1::bigint AS big, $2::int4 AS n, $3::numeric AS num, $4::bytea AS bytes, $5::int[] AS arr, $6::jsonb AS doc, $7::boolean AS flag, $8::timestamptz AS at, $9::text AS nothing';
    const shapes = [
      -(2n ** 63n),
      42,
      '12345678901234567890.5',
      Buffer.from([0, 1, 255]),
      [1, null, 3],
      { a: "b'c", n: [1] },
      true,
      new Date('2026-11-27T21:00:00.123Z'),
      undefined,
    ];
    let readyForQuery = 0;
    client.connection.on('readyForQuery', () => readyForQuery++);

    const results = expectOk(
      await runPipelined(client, [
        {
          name: 'ins',
          text: 'INSERT INTO item (id, qty, note) VALUES ($1, $2, $3)',
          values: [9007199254740993n, 7, null],
        },
        {
          name: 'ins_ret',
          text: 'INSERT INTO item (id, qty, note) VALUES ($1, $2, $3) RETURNING id, qty, note',
          values: [2n, -3, 'two'],
        },
        { name: 'sel', text: 'SELECT id, qty, note FROM item ORDER BY qty DESC', values: [] },
        { name: 'none', text: 'SELECT id FROM item WHERE qty > $1', values: [100] },
        { name: 'shapes', text: shapesText, values: shapes },
        { name: '', text: '', values: [] },
      ]),
    );

    expect(readyForQuery).toBe(1);
    expect(results.map((result) => [result.command, result.rowCount])).toEqual([
      ['INSERT', 1],
      ['INSERT', 1],
      ['SELECT', 2],
      ['SELECT', 0],
      ['SELECT', 1],
      [null, null],
    ]);
    expect(results[0]?.rows).toEqual([]);
    expect(results[1]?.rows).toEqual([{ id: '2', qty: -3, note: 'two' }]);
    expect(results[2]?.rows).toEqual([
      { id: '9007199254740993', qty: 7, note: null },
      { id: '2', qty: -3, note: 'two' },
    ]);
    expect(results[3]?.rows).toEqual([]);
    expect(results[3]?.fields.map((field) => field.name)).toEqual(['id']);
    expect(results[4]?.rows).toEqual([
      {
        big: '-9223372036854775808',
        n: 42,
        num: '12345678901234567890.5',
        bytes: Buffer.from([0, 1, 255]),
        arr: [1, null, 3],
        doc: { a: "b'c", n: [1] },
        flag: true,
        at: new Date('2026-11-27T21:00:00.123Z'),
        nothing: null,
      },
    ]);
    const direct = await client.query(shapesText, shapes);
    expect(results[4]?.rows).toEqual(direct.rows);
    expect(results[4]?.fields).toEqual(direct.fields);
  });

  it("gives a statement's rows as arrays when asked, as client.query's rowMode 'array' does, and keeps a column named __proto__ as data", async () => {
    const client = await connect({ types: int8AsNumberTypes() });
    const text = 'SELECT $1::bigint AS big, $2::text AS t, NULL::int AS nothing, 7 AS t, $3::text AS "__proto__"';
    const values = [4102444800000n, 'x', 'p'];
    const [arrays, objects] = expectOk(
      await runPipelined(client, [
        { name: 'as_arrays', text, values, arrayRows: true },
        { name: 'as_objects', text, values },
      ]),
    );
    const direct = await client.query({ text, values, rowMode: 'array' });
    expect(arrays?.rows).toEqual(direct.rows);
    expect(arrays?.rows).toEqual([[4102444800000, 'x', null, 7, 'p']]);
    const row = objects?.rows[0];
    expect(Object.getPrototypeOf(row)).toBe(Object.prototype);
    expect(Object.entries(row ?? {})).toEqual([
      ['big', 4102444800000],
      ['t', 7],
      ['nothing', null],
      ['__proto__', 'p'],
    ]);
    expect(row).toEqual((await client.query(text, values)).rows[0]);
  });

  it("parses rows with the client's own type parsers", async () => {
    const client = await connect({ types: int8AsNumberTypes() });
    const [result] = expectOk(
      await runPipelined(client, [{ name: 'big', text: 'SELECT $1::bigint AS big', values: [4102444800000n] }]),
    );
    expect(result?.rows).toEqual([{ big: 4102444800000 }]);
  });

  it('is one implicit transaction: when statement 2 of 3 fails nothing is kept, the connection is idle and usable', async () => {
    const client = await connect();
    await client.query('CREATE TABLE account (id text PRIMARY KEY, balance bigint NOT NULL)');
    await client.query("INSERT INTO account VALUES ('taken', 0)");
    const transfer = (secondId: string): PipelinedStatement[] => [
      { name: 'open', text: 'INSERT INTO account (id, balance) VALUES ($1, $2)', values: ['first', 1n] },
      { name: 'open', text: 'INSERT INTO account (id, balance) VALUES ($1, $2)', values: [secondId, 2n] },
      { name: 'credit', text: 'UPDATE account SET balance = balance + $1 WHERE id = $2', values: [10n, 'taken'] },
    ];
    const parses = countParses(client);

    const failed = await runPipelined(client, transfer('taken'));
    expect(failed).toMatchObject({ ok: false, failedIndex: 1, error: { code: '23505', constraint: 'account_pkey' } });
    expect(!failed.ok && failed.error).toBeInstanceOf(pg.DatabaseError);
    expect(client.getTransactionStatus()).toBe('I');
    const observer = await connect();
    expect((await observer.query('SELECT id, balance FROM account ORDER BY id')).rows).toEqual([
      { id: 'taken', balance: '0' },
    ]);
    expect((await client.query('SELECT count(*)::int AS n FROM account')).rows).toEqual([{ n: 1 }]);

    // 'open' parsed (its Parse completed before the failure; prepared statements outlive the rollback), 'credit'
    // was skipped by the server: only 'credit' is parsed again, and nothing fails with "already exists".
    expect(parses).toEqual(['open', 'credit']);
    expectOk(await runPipelined(client, transfer('second')));
    expect(parses).toEqual(['open', 'credit', 'credit']);
    expect((await observer.query('SELECT id, balance FROM account ORDER BY id')).rows).toEqual([
      { id: 'first', balance: '1' },
      { id: 'second', balance: '2' },
      { id: 'taken', balance: '10' },
    ]);
  });

  it('reports a failure of the commit at Sync (deferred constraint) as failedIndex = statements.length, with nothing kept', async () => {
    const client = await connect();
    await client.query('CREATE TABLE slot (id int, CONSTRAINT slot_once UNIQUE (id) DEFERRABLE INITIALLY DEFERRED)');
    const parses = countParses(client);
    const insert = { name: 'slot', text: 'INSERT INTO slot (id) VALUES ($1)', values: [1] };
    const result = await runPipelined(client, [insert, insert]);
    expect(parses).toEqual(['slot']); // the same statement twice: parsed once, bound twice
    expect(result).toMatchObject({ ok: false, failedIndex: 2, error: { code: '23505', constraint: 'slot_once' } });
    expect((await client.query('SELECT count(*)::int AS n FROM slot')).rows).toEqual([{ n: 0 }]);
  });

  it('parses a named statement once per connection, and never records a name whose Parse did not complete', async () => {
    const client = await connect();
    const parses = countParses(client);
    const pair: PipelinedStatement[] = [
      { name: 'plus_one', text: 'SELECT $1::int + 1 AS n', values: [1] },
      { name: 'echo', text: 'SELECT $1::text AS t', values: ['x'] },
      { name: '', text: 'SELECT 5 AS n', values: [] },
    ];
    expectOk(await runPipelined(client, pair));
    expect(parses).toEqual(['plus_one', 'echo', '']);
    const again = expectOk(await runPipelined(client, pair));
    expect(parses).toEqual(['plus_one', 'echo', '', '']); // the unnamed statement is parsed every time
    expect(again.map((result) => result.rows)).toEqual([[{ n: 2 }], [{ t: 'x' }], [{ n: 5 }]]);

    const other = await connect();
    const otherParses = countParses(other);
    expectOk(await runPipelined(other, pair));
    expect(otherParses).toEqual(['plus_one', 'echo', '']);

    parses.length = 0;
    const broken = await runPipelined(client, [
      pair[0]!,
      { name: 'fixed_later', text: 'SELEC 1', values: [] },
      { name: 'after', text: 'SELECT 3 AS n', values: [] },
    ]);
    expect(broken).toMatchObject({ ok: false, failedIndex: 1, error: { code: '42601' } });
    expect(parses).toEqual(['fixed_later', 'after']);
    const fixed = expectOk(
      await runPipelined(client, [
        { name: 'fixed_later', text: 'SELECT 2 AS n', values: [] },
        { name: 'after', text: 'SELECT 3 AS n', values: [] },
      ]),
    );
    expect(parses).toEqual(['fixed_later', 'after', 'fixed_later', 'after']);
    expect(fixed.map((result) => result.rows)).toEqual([[{ n: 2 }], [{ n: 3 }]]);
  });

  it("describes a named statement's columns once per connection, and reads its later rows with them", async () => {
    const client = await connect();
    const describes = countDescribes(client);
    const statements: PipelinedStatement[] = [
      {
        name: 'shapes',
        text: 'SELECT $1::bigint AS big, $2::text AS t, $3::int[] AS arr, $4::int AS nothing',
        values: [7, 'a', [1, 2], null],
      },
      { name: 'as_arrays', text: 'SELECT $1::int AS n, $1::int + 1 AS m', values: [1], arrayRows: true },
      { name: 'empty', text: 'SELECT 1 AS n WHERE false', values: [] },
      { name: '', text: 'SELECT 5 AS n', values: [] },
    ];
    const first = expectOk(await runPipelined(client, statements));
    expect(describes.count).toBe(4);
    const again = expectOk(await runPipelined(client, statements));
    expect(describes.count).toBe(5); // only the unnamed statement is described again
    for (const results of [first, again]) {
      expect(results.map((result) => result.rows)).toEqual([
        [{ big: '7', t: 'a', arr: [1, 2], nothing: null }],
        [[1, 2]],
        [],
        [{ n: 5 }],
      ]);
      expect(results.map((result) => [result.command, result.rowCount])).toEqual([
        ['SELECT', 1],
        ['SELECT', 1],
        ['SELECT', 0],
        ['SELECT', 1],
      ]);
      expect(results[0]!.fields.map((field) => field.name)).toEqual(['big', 't', 'arr', 'nothing']);
    }
    // A statement whose result type changed under it is refused by the server, not read with the old columns.
    await client.query('CREATE TABLE shifting (v int)');
    await client.query('INSERT INTO shifting VALUES (1)');
    const read: PipelinedStatement = { name: 'read_shifting', text: 'SELECT * FROM shifting', values: [] };
    expect(expectOk(await runPipelined(client, [read]))[0]!.rows).toEqual([{ v: 1 }]);
    await client.query('ALTER TABLE shifting ALTER COLUMN v TYPE text');
    expect(await runPipelined(client, [read])).toMatchObject({ ok: false, failedIndex: 0, error: { code: '0A000' } });
    // Another connection describes for itself.
    const other = await connect();
    const otherDescribes = countDescribes(other);
    expectOk(await runPipelined(other, statements));
    expect(otherDescribes.count).toBe(4);
  });

  it("shares pg's record of prepared names with client.query({ name }), and refuses a name reused for other text", async () => {
    const client = await connect();
    const parses = countParses(client);
    expectOk(await runPipelined(client, [{ name: 'double', text: 'SELECT $1::int * 2 AS n', values: [2] }]));
    expect((await client.query({ name: 'double', text: 'SELECT $1::int * 2 AS n', values: [5] })).rows).toEqual([
      { n: 10 },
    ]);
    await client.query({ name: 'triple', text: 'SELECT $1::int * 3 AS n', values: [1] });
    expect(
      expectOk(await runPipelined(client, [{ name: 'triple', text: 'SELECT $1::int * 3 AS n', values: [3] }]))[0]?.rows,
    ).toEqual([{ n: 9 }]);
    expect(parses).toEqual(['double', 'triple']);

    await expect(
      runPipelined(client, [{ name: 'double', text: 'SELECT $1::int * 4 AS n', values: [1] }]),
    ).rejects.toThrow(/different text/);
    await expect(
      runPipelined(client, [
        { name: 'same', text: 'SELECT 1', values: [] },
        { name: 'same', text: 'SELECT 2', values: [] },
      ]),
    ).rejects.toThrow(/different text/);
    expect(parses).toEqual(['double', 'triple']);
    expect((await client.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });

  it("lets a later statement see an earlier one's writes (each statement takes a new snapshot)", async () => {
    const client = await connect();
    await client.query(
      "CREATE TABLE counter (id text PRIMARY KEY, value bigint NOT NULL); INSERT INTO counter VALUES ('a', 1)",
    );
    const results = expectOk(
      await runPipelined(client, [
        { name: 'bump', text: 'UPDATE counter SET value = value + $1 WHERE id = $2', values: [41n, 'a'] },
        { name: 'add', text: 'INSERT INTO counter (id, value) VALUES ($1, $2)', values: ['b', 7n] },
        { name: 'read', text: 'SELECT id, value FROM counter ORDER BY id', values: [] },
      ]),
    );
    expect(results[2]?.rows).toEqual([
      { id: 'a', value: '42' },
      { id: 'b', value: '7' },
    ]);
  });

  it('sends values as bound parameters: quotes, backslashes, SQL and unicode come back unchanged', async () => {
    const client = await connect();
    await client.query('CREATE TABLE note (id int PRIMARY KEY, body text NOT NULL)');
    const bodies = [
      "it's",
      "''",
      'back\\slash \\\\ \\x41 \\0',
      "E'\\\\'",
      "'); DROP TABLE note; --",
      '$1 $$ $tag$ ;',
      'ünïcødé ✓ 𝄞 日本語 \u200d',
      `${"'\\".repeat(50_000)}${'long '.repeat(40_000)}`,
    ];
    const results = expectOk(
      await runPipelined(client, [
        ...bodies.map((body, id) => ({
          name: 'put_note',
          text: 'INSERT INTO note (id, body) VALUES ($1, $2) RETURNING body',
          values: [id, body],
        })),
        { name: 'all_notes', text: 'SELECT body FROM note ORDER BY id', values: [] },
      ]),
    );
    expect(results.slice(0, bodies.length).map((result) => result.rows[0]?.body)).toEqual(bodies);
    expect(results[bodies.length]?.rows.map((row) => row.body)).toEqual(bodies);
  });

  it('rejects, rather than hangs, when the server ends the connection mid-pipeline, and nothing is kept', async () => {
    const client = await connect();
    await client.query('CREATE TABLE mark (id int)');
    const pipeline = runPipelined(client, [
      { name: 'mark', text: 'INSERT INTO mark (id) VALUES ($1)', values: [1] },
      { name: 'die', text: 'SELECT pg_terminate_backend(pg_backend_pid())', values: [] },
      { name: 'mark', text: 'INSERT INTO mark (id) VALUES ($1)', values: [2] },
    ]);
    await expect(pipeline).rejects.toMatchObject({ message: /outcome is unknown/, cause: { code: '57P01' } });
    expect((await admin.query(`SELECT count(*)::int AS n FROM ${schema}.mark`)).rows).toEqual([{ n: 0 }]);
    await expect(runPipelined(client, [{ name: 'one', text: 'SELECT 1', values: [] }])).rejects.toThrow(
      /not queryable/,
    );
  });

  it('rejects, rather than hangs, when the socket is lost while the pipeline is in flight', async () => {
    const client = await connect();
    const pipeline = runPipelined(client, [
      { name: 'one', text: 'SELECT 1', values: [] },
      { name: 'two', text: 'SELECT 2', values: [] },
    ]);
    client.connection.stream.destroy();
    const lost = await pipeline.then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(lost).toMatchObject({ message: /outcome is unknown|terminated/ });
    // A lost server is an outage (503, the journal), as pg's own "Connection terminated unexpectedly" is.
    expect(isStorageUnavailable(lost)).toBe(true);
  });

  it('fails locally, sending nothing, for a value pg cannot serialise; an empty list needs no round trip', async () => {
    const client = await connect();
    const parses = countParses(client);
    const circular = {
      toPostgres(): unknown {
        return circular;
      },
    };
    await expect(
      runPipelined(client, [
        { name: 'fine', text: 'SELECT $1::text AS t', values: ['ok'] },
        { name: 'bad', text: 'SELECT $1::text AS t', values: [circular] },
      ]),
    ).rejects.toThrow(/circular/);
    expect(parses).toEqual([]);
    expect(await runPipelined(client, [])).toEqual({ ok: true, results: [] });
    expect((await client.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });
});
