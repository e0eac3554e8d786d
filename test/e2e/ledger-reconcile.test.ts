/**
 * The ledger reconcile after varied traffic through the built gateway: whole and streamed replies on three families,
 * cache reads and writes, a free allowance, usage the balance could not pay (unbilled) and a stream cut by the
 * balance. `tollgate ledger reconcile --json`, run as a process on the gateway's database, then finds nothing to flag
 * and totals equal to the usage the replies reported; the operator API gives the same report. A bad range is a usage
 * error (exit 2, no report); a ledger line altered behind the gateway's back is flagged by request id (exit 1).
 */
import Database from 'better-sqlite3';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import { BUILT_CLI } from '../helpers/cli-path.js';
import { DashboardClient } from '../helpers/dashboard-client.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const run = promisify(execFile);
const PASSWORD = 'a-long-enough-password';

interface Kinds {
  input: number;
  cache_read: number;
  cache_write: number;
  output: number;
}
interface Totals {
  requests: number;
  reported: Kinds;
  free: Kinds;
  billed: Kinds;
  unbilled: Kinds;
  overrun_output_tokens: number;
  charged_nano_usd: string;
  ledger_nano_usd: string;
}
interface Report {
  ok: boolean;
  from: string;
  to: string;
  groups: Array<Totals & { day: string; model: string }>;
  totals: Totals;
  flagged_requests: number;
  flags: Array<{ request_id: string; reasons: string[] }>;
}
interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
}

let harness: TestGateway;
/** What the replies reported, summed: OpenAI's prompt tokens are input, cache reads and cache writes together. */
const reported = { prompt: 0, output: 0, requests: 0 };
const requestIds: string[] = [];

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [BUILT_CLI, ...args], {
      env: { ...process.env, ...harness.env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

async function account(usd: string): Promise<string> {
  const created = await harness.createAccountWithKey(undefined, 'enterprise');
  if (usd !== '0')
    await harness.gateway.storage.billing.credit({
      accountId: created.accountId,
      kind: 'topup',
      amountNano: parseUsd(usd),
      idempotencyKey: `t-${created.accountId}`,
      note: null,
      at: Date.now(),
    });
  return created.key;
}

/** A chat completion, whole or streamed (with its usage chunk); counts the usage the reply reported. */
async function chat(key: string, model: string, content: string, stream: boolean): Promise<{ finish: string }> {
  const response = await fetch(`${harness.openaiBaseUrl}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model,
      stream,
      ...(stream ? { stream_options: { include_usage: true } } : {}),
      messages: [{ role: 'user', content }],
    }),
  });
  const text = await response.text();
  expect(response.status, text).toBe(200);
  requestIds.push(response.headers.get('x-request-id')!);
  let usage: Usage;
  let finish: string;
  if (stream) {
    const chunks = text
      .split('\n\n')
      .filter((frame) => frame.startsWith('data: ') && frame !== 'data: [DONE]')
      .map(
        (frame) => JSON.parse(frame.slice(6)) as { choices: Array<{ finish_reason: string | null }>; usage?: Usage },
      );
    usage = chunks.at(-1)!.usage!;
    finish = chunks.flatMap((chunk) => chunk.choices.map((choice) => choice.finish_reason)).find((r) => r !== null)!;
  } else {
    const body = JSON.parse(text) as { usage: Usage; choices: Array<{ finish_reason: string }> };
    usage = body.usage;
    finish = body.choices[0]!.finish_reason;
  }
  reported.prompt += usage.prompt_tokens;
  reported.output += usage.completion_tokens;
  reported.requests += 1;
  return { finish };
}

/** The reconcile as a process, once every request of the traffic is settled (a stream settles after its last byte). */
async function settledReport(): Promise<{ code: number; report: Report }> {
  for (let attempt = 0; ; attempt++) {
    const result = await cli(['ledger', 'reconcile', '--json']);
    const report = JSON.parse(result.stdout) as Report;
    if (report.totals.requests >= reported.requests || attempt >= 50) return { code: result.code, report };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const sum = (kinds: Kinds) => kinds.input + kinds.cache_read + kinds.cache_write + kinds.output;

beforeAll(async () => {
  if (!existsSync(BUILT_CLI)) throw new Error(`${BUILT_CLI} is missing: run the build first (npm test does).`);
  harness = await startTestGateway({ env: { FREE_TOKENS_PER_DAY: '3000' } });
}, 60_000);

afterAll(async () => {
  await harness?.close();
});

describe('ledger reconcile after varied traffic', () => {
  it('finds nothing to flag, and its totals are what the replies reported', async () => {
    const rich = await account('10');
    await chat(rich, 'beta-5.4', 'Hello [[sim words=40 prompt-tokens=20000]]', false);
    await chat(rich, 'alpha-sonnet-5', 'Stream it [[sim words=60 cache-write=800 cache-write-1h=300]]', true);
    await chat(rich, 'gamma-2.5-pro', 'And again [[sim words=30]]', true);
    await chat(rich, 'alpha-sonnet-5', 'Whole [[sim words=20 cache-read=500 prompt-tokens=700]]', false);

    // Free: the day's allowance covers it whole; then a vendor count far past it on a $0 account: unbilled.
    const poor = await account('0');
    await chat(poor, 'beta-5.4', 'Small [[sim words=10 prompt-tokens=900 output-tokens=100]]', false);
    await chat(poor, 'beta-5.4', 'Large [[sim words=10 prompt-tokens=90000 output-tokens=50]]', false);

    // Cut by the balance: a long stream on $0.01 ends as a length stop, with the vendor's overrun unbilled.
    const cut = await account('0.01');
    expect((await chat(cut, 'beta-5.4', 'Write at length [[sim words=8000 chunk-delay=0]]', true)).finish).toBe(
      'length',
    );

    const { code, report } = await settledReport();
    expect(report.flags).toEqual([]);
    expect(report.ok).toBe(true);
    expect(code).toBe(0);
    const today = new Date().toISOString().slice(0, 10);
    expect(report.to).toBe(today);
    const { totals } = report;
    expect(totals.requests).toBe(reported.requests);
    expect(totals.reported.input + totals.reported.cache_read + totals.reported.cache_write).toBe(reported.prompt);
    expect(totals.reported.output).toBe(reported.output);
    expect(totals.reported.cache_read).toBeGreaterThan(0);
    expect(totals.reported.cache_write).toBeGreaterThan(0);
    expect(BigInt(totals.charged_nano_usd)).toBeGreaterThan(0n);
    for (const kind of ['input', 'cache_read', 'cache_write', 'output'] as const)
      expect(totals.free[kind] + totals.billed[kind] + totals.unbilled[kind]).toBe(totals.reported[kind]);
    expect(sum(totals.free)).toBeGreaterThan(0);
    expect(sum(totals.unbilled)).toBeGreaterThan(0);
    expect(totals.overrun_output_tokens).toBeGreaterThan(0);
    expect(BigInt(totals.ledger_nano_usd)).toBe(-BigInt(totals.charged_nano_usd));
    expect(new Set(report.groups.map((group) => group.model))).toEqual(
      new Set(['alpha-sonnet-5', 'beta-5.4', 'gamma-2.5-pro']),
    );
    expect(report.groups.reduce((requests, group) => requests + group.requests, 0)).toBe(totals.requests);

    // The text report says the same.
    const text = await cli(['ledger', 'reconcile']);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('OK: every request adds up');

    // The operator API: the same report for an operator's session, refused to a user's.
    const operatorEmail = `ops-${Date.now()}@example.com`;
    await harness.gateway.accounts.create({ email: operatorEmail, password: PASSWORD, role: 'admin' });
    const operator = new DashboardClient(harness.gateway.url);
    expect((await operator.login(operatorEmail, PASSWORD)).status).toBe(200);
    const api = await operator.get(`/api/admin/ledger/reconcile?from=${today}&to=${today}`);
    expect(api.status, api.text).toBe(200);
    expect(api.json).toEqual({ ...report, from: today });
    const refused = await operator.get('/api/admin/ledger/reconcile?from=2026-02-30');
    expect(refused.status).toBe(400);
    expect(refused.json.error).toMatchObject({ code: 'invalid_request', field: 'from' });
    const user = new DashboardClient(harness.gateway.url);
    expect((await user.register(`user-${Date.now()}@example.com`, PASSWORD)).status).toBe(201);
    expect((await user.get('/api/admin/ledger/reconcile')).status).toBe(403);
  });

  it('refuses a bad range with exit code 2 and no report', async () => {
    for (const args of [
      ['--from', '2026-02-30'],
      ['--from', '2026-03-05', '--to', '2026-03-04'],
      ['--to', 'tomorrow'],
    ]) {
      const result = await cli(['ledger', 'reconcile', ...args]);
      expect(result.code, result.stderr).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(/--(from|to) /);
      const json = await cli(['ledger', 'reconcile', ...args, '--json']);
      expect(json.code).toBe(2);
      expect(Object.keys(JSON.parse(json.stdout) as object)).toEqual(['error']);
    }
  });

  it('flags a ledger line altered behind the gateway, by request id, with exit code 1', async () => {
    const database = new Database(harness.databaseUrl.slice('sqlite:'.length));
    let altered: string;
    try {
      const charged = database
        .prepare("select request_id from ledger_entries where kind = 'usage' and amount_nano < 0 order by id limit 1")
        .get() as { request_id: string };
      altered = charged.request_id;
      expect(requestIds).toContain(altered);
      database.prepare('update ledger_entries set amount_nano = amount_nano - 1 where request_id = ?').run(altered);
    } finally {
      database.close();
    }
    const result = await cli(['ledger', 'reconcile', '--json']);
    expect(result.code).toBe(1);
    const report = JSON.parse(result.stdout) as Report;
    expect(report.ok).toBe(false);
    expect(report.flags).toEqual([
      expect.objectContaining({ request_id: altered, reasons: ['ledger_amount_mismatch'] }),
    ]);
    const text = await cli(['ledger', 'reconcile']);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain(altered);
  });
});
