/**
 * `GET /v1/usage/export` on the built gateway over 200,000 usage records (inserted with one SQL statement into the
 * gateway's database, SQLite and PostgreSQL): every record comes back exactly once, oldest first, while the gateway
 * process's resident memory grows by less than a stated bound; a range, NDJSON, bad input and the key's scope.
 */
import Database from 'better-sqlite3';
import pg from 'pg';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FULL_PERMISSIONS } from '../../src/storage/key-permission-types.js';
import type { UsageEvent } from '../../src/telemetry/usage-export/usage-event.js';
import { DashboardClient, uniqueEmail } from '../helpers/dashboard-client.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const RECORDS = 200_000;
/** 2025-01-01T00:00:00Z: record i is created i seconds after it. */
const START = Date.UTC(2025, 0, 1);
/**
 * The gateway runs with a 96 MB old space (its live heap is ~30-40 MB): the export's CSV is ~42 MB and its records
 * as objects several times that, so an export that gathered the range before sending would run out of heap and die.
 * Its resident memory may grow by at most 192 MiB meanwhile (measured: 50-145 MiB): most of that is V8 growing its
 * new space under load (up to 2 × 16 MB) and garbage between collections, not what the export keeps.
 */
const OLD_SPACE_MB = 96;
const RSS_GROWTH_BOUND_BYTES = 192 * 1024 * 1024;

/** Rows i = 1…RECORDS, one statement: the key's account, alternating models, cost i nano-USD. */
const SELECT_ROWS = (placeholder: (n: number) => string) => `
  select 'req_bulk_' || lpad_i, ${placeholder(1)}, ${placeholder(2)},
    case when i % 2 = 0 then 'beta-5.4' else 'alpha-sonnet-5' end, case when i % 2 = 0 then 'beta' else 'alpha' end,
    100, 3, 2, 50, 7, 'ok', 0, 120, ${START} + i * 1000, i, 0, 0, '/v1/chat/completions'`;

function fillSqlite(filename: string, accountId: string, keyId: string): void {
  const db = new Database(filename);
  try {
    db.pragma('busy_timeout = 10000');
    db.prepare(
      `insert into usage_records (request_id, account_id, api_key_id, model, family, input_tokens, cache_read_tokens,
         cache_write_tokens, output_tokens, reasoning_tokens, status, stream, latency_ms, created_at, cost_nano,
         free_tokens, unbilled_nano, route)
       with recursive n(i) as (select 1 union all select i + 1 from n where i < ${RECORDS})
       ${SELECT_ROWS((index) => `:p${index}`).replace('lpad_i', "substr('000000' || i, -6)")} from n`,
    ).run({ p1: accountId, p2: keyId });
  } finally {
    db.close();
  }
}

async function fillPostgres(url: string, accountId: string, keyId: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(
      `insert into usage_records (request_id, account_id, api_key_id, model, family, input_tokens, cache_read_tokens,
         cache_write_tokens, output_tokens, reasoning_tokens, status, stream, latency_ms, created_at, cost_nano,
         free_tokens, unbilled_nano, route)
       ${SELECT_ROWS((index) => `$${index}::text`).replace('lpad_i', "lpad(i::text, 6, '0')")}
       from generate_series(1, ${RECORDS}) as i`,
      [accountId, keyId],
    );
    // What autovacuum would do after a bulk load: the planner needs the table's size to pick the index.
    await client.query('analyze usage_records');
  } finally {
    await client.end();
  }
}

/** The process's resident set size, from /proc (Linux). */
function residentBytes(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (match === null) throw new Error(`No VmRSS for process ${pid}.`);
  return Number(match[1]) * 1024;
}

describe.each([{ postgres: false }, { postgres: true }])(
  'GET /v1/usage/export (postgres: $postgres)',
  ({ postgres }) => {
    let harness: TestGateway;
    let key: string;
    let accountId: string;
    const email = uniqueEmail('export');

    beforeAll(async () => {
      harness = await startTestGateway({
        postgres,
        env: {
          LOG_LEVEL: 'warn',
          NODE_OPTIONS: `--max-old-space-size=${OLD_SPACE_MB}`,
          // The records are dated 2025: retention must not delete them while they are read.
          USAGE_RETENTION_DAYS: '0',
        },
      });
      const created = await harness.createAccountWithKey(email);
      ({ key, accountId } = created);
      if (postgres) await fillPostgres(harness.databaseUrl, accountId, created.keyId);
      else fillSqlite(harness.databaseUrl.replace(/^sqlite:/, ''), accountId, created.keyId);
    }, 120_000);

    afterAll(async () => {
      await harness?.close();
    });

    const exportUrl = (query: string) => `${harness.openaiBaseUrl}/usage/export?${query}`;
    const get = (query: string, secret = key) =>
      fetch(exportUrl(query), { headers: { authorization: `Bearer ${secret}` } });

    it('streams every one of 200,000 records once, oldest first, in bounded memory', async () => {
      const pid = harness.gateway.process.pid!;
      // A small export first, so what a first call allocates once (code, statements) is in the baseline.
      await (await get(`from=${START / 1000}&to=${START / 1000 + 100}`)).text();
      const baseline = residentBytes(pid);
      let peak = baseline;
      const sampler = setInterval(() => {
        const now = residentBytes(pid);
        peak = Math.max(peak, now);
      }, 20);
      const response = await get(`from=2025-01-01&to=2025-01-04&format=csv`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/csv; charset=utf-8');
      expect(response.headers.get('content-disposition')).toBe(
        'attachment; filename="tollgate-usage-2025-01-01-2025-01-04.csv"',
      );
      const seen = new Set<string>();
      let previous = '';
      let header: string[] | undefined;
      let pending = '';
      let rows = 0;
      const outOfOrder = 0;
      const decoder = new TextDecoder();
      try {
        // Read as it arrives, line by line: the test holds only ids, never the body.
        for await (const chunk of response.body!) {
          pending += decoder.decode(chunk, { stream: true });
          const lines = pending.split('\r\n');
          pending = lines.pop()!;
          for (const line of lines) {
            const fields = line.split(',');
            if (header === undefined) {
              header = fields;
              continue;
            }
            rows += 1;
            const requestId = fields[0]!;
            expect(requestId > previous).toBe(true);
            previous = requestId;
            seen.add(requestId);
          }
        }
      } finally {
        clearInterval(sampler);
      }
      expect(pending).toBe('');
      expect(header?.slice(0, 4)).toEqual(['request_id', 'created_at', 'created_at_ms', 'organisation_id']);
      expect(rows).toBe(RECORDS);
      expect(outOfOrder).toBe(0);
      expect(seen.size).toBe(RECORDS);
      expect(previous).toBe(`req_bulk_${RECORDS}`);
      const growth = peak - baseline;
      console.info(`usage export of ${RECORDS} records: gateway RSS grew ${(growth / 2 ** 20).toFixed(1)} MiB`);
      expect(growth).toBeLessThan(RSS_GROWTH_BOUND_BYTES);
    }, 240_000);

    it('takes a range, and NDJSON with exact money', async () => {
      // Records 11…20: created 11 s … 20 s after the start.
      const response = await get(
        `from=${new Date(START + 11_000).toISOString()}&to=${START / 1000 + 21}&format=ndjson`,
      );
      expect(response.headers.get('content-type')).toBe('application/x-ndjson; charset=utf-8');
      const events = (await response.text())
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line) as UsageEvent);
      expect(events.map((event) => event.request_id)).toEqual(
        Array.from({ length: 10 }, (_, index) => `req_bulk_${String(index + 11).padStart(6, '0')}`),
      );
      expect(events[0]).toMatchObject({
        organisation_id: accountId,
        model: 'alpha-sonnet-5',
        input_tokens: 100,
        cache_read_tokens: 3,
        cache_write_tokens: 2,
        output_tokens: 50,
        reasoning_tokens: 7,
        cost_nano_usd: '11',
        cost_usd: '0.000000011',
        route: '/v1/chat/completions',
        status: 'ok',
      });
    });

    it('refuses bad input in the OpenAI error shape, and a key without usage:read', async () => {
      const bad = await get('from=yesterday');
      expect(bad.status).toBe(400);
      expect(((await bad.json()) as { error: { param: string } }).error.param).toBe('from');
      const backwards = await get('from=2025-01-02&to=2025-01-01');
      expect(backwards.status).toBe(400);
      expect(((await backwards.json()) as { error: { message: string } }).error.message).toMatch(/earlier than 'to'/);
      const format = await get('format=xml');
      expect(format.status).toBe(400);
      const modelsOnly = await harness.gateway.keys.create(accountId, accountId, {
        name: 'models only',
        permissions: { ...FULL_PERMISSIONS, scopes: ['models:use'] },
      });
      const refused = await get('from=2025-01-01', modelsOnly.secret);
      expect(refused.status).toBe(403);
      await refused.arrayBuffer();
      // Another account's key sees none of these records.
      const other = await harness.createAccountWithKey();
      expect(await (await get('from=2025-01-01&to=2025-01-04&format=ndjson', other.key)).text()).toBe('');
    });

    it("gives the dashboard any range of the account's usage as CSV or JSON, filtered by model", async () => {
      const dashboard = new DashboardClient(harness.gateway.url);
      expect((await dashboard.login(email, 'correct horse battery staple')).status).toBe(200);
      // Records 11…20, the alpha ones (odd i) only.
      const json = await dashboard.get(
        `/api/usage/export?from=${START / 1000 + 11}&to=${START / 1000 + 21}&format=json&model=alpha-sonnet-5`,
      );
      expect(json.status).toBe(200);
      expect(json.headers.get('content-disposition')).toBe(
        'attachment; filename="tollgate-usage-2025-01-01-to-2025-01-01.ndjson"',
      );
      const events = json.text
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line) as UsageEvent);
      expect(events.map((event) => event.request_id)).toEqual(
        [11, 13, 15, 17, 19].map((index) => `req_bulk_${String(index).padStart(6, '0')}`),
      );
      const csv = await dashboard.get('/api/usage/export?from=2025-01-01&to=2025-01-01T01:00:00Z&format=csv');
      const lines = csv.text.trimEnd().split('\r\n');
      expect(lines[0]).toMatch(/^request_id,created_at,created_at_ms,organisation_id,/);
      // The first hour holds records 1…3,599 (record i is i seconds after midnight).
      expect(lines).toHaveLength(1 + 3_599);
      const bad = await dashboard.get('/api/usage/export?from=soon');
      expect(bad.status).toBe(400);
      expect(bad.json.error.field).toBe('from');
    });

    it("gives the dashboard any range of the account's ledger as CSV or JSON", async () => {
      for (const [index, seconds] of [5, 15, 25, 15].entries())
        await harness.gateway.storage.billing.credit({
          accountId,
          kind: 'topup',
          amountNano: BigInt(index + 1) * 1_000_000_000n,
          idempotencyKey: `ledger-export-${index}`,
          note: index === 3 ? '=SUM(A1)' : null,
          at: START + seconds * 1000,
        });
      const dashboard = new DashboardClient(harness.gateway.url);
      expect((await dashboard.login(email, 'correct horse battery staple')).status).toBe(200);
      const range = `from=${START / 1000 + 10}&to=${START / 1000 + 30}`;
      const json = await dashboard.get(`/api/billing/ledger/export?${range}&format=json`);
      expect(json.status).toBe(200);
      const entries = json.text
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line) as { amount_usd: string; created_at: string; kind: string });
      // Oldest first; the two at 15 s in id order, so the amounts of entries 2 and 4 in some order, then 3.
      expect(entries.map((entry) => entry.created_at)).toEqual([
        new Date(START + 15_000).toISOString(),
        new Date(START + 15_000).toISOString(),
        new Date(START + 25_000).toISOString(),
      ]);
      expect(entries.map((entry) => entry.amount_usd).sort()).toEqual(['2', '3', '4']);
      const csv = await dashboard.get(`/api/billing/ledger/export?${range}&format=csv`);
      const lines = csv.text.trimEnd().split('\r\n');
      expect(lines[0]).toBe(
        'id,created_at,kind,amount_usd,amount_nano_usd,balance_after_usd,balance_after_nano_usd,request_id,note,unbilled_tokens,unbilled_cost_usd,unbilled_cost_nano_usd,web_search_requests,web_fetch_requests,server_tool_cost_usd,server_tool_cost_nano_usd',
      );
      expect(lines).toHaveLength(4);
      expect(csv.text).toContain(",'=SUM(A1),"); // a formula is defused
      expect((await dashboard.get('/api/billing/ledger/export?from=2025-01-02&to=2025-01-01')).status).toBe(400);
    });
  },
);
