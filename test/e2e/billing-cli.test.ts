import Database from 'better-sqlite3';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILT_CLI } from '../helpers/cli-path.js';
import { startTestGateway, type GatewayUnderTest, type TestGateway } from '../helpers/test-gateway.js';

const run = promisify(execFile);
const CLI = BUILT_CLI;

let harness: TestGateway;
let databaseFile: string;
let env: Record<string, string>;
let gateway: GatewayUnderTest;
let key: string;
let accountId: string;

interface CliResult {
  code: number;
  json: any;
  stdout: string;
  stderr: string;
}

async function cli(args: string[], { json = true } = {}): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args, ...(json ? ['--json'] : [])], {
      env: { ...process.env, ...env },
    });
    return { code: 0, json: json ? JSON.parse(stdout) : null, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return {
      code: failed.code,
      json: json && failed.stdout ? JSON.parse(failed.stdout) : null,
      stdout: failed.stdout,
      stderr: failed.stderr,
    };
  }
}

async function redeem(code: string): Promise<{ status: number; json: any }> {
  const response = await fetch(`${gateway.url}/v1/account/redeem`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ code }),
  });
  return { status: response.status, json: await response.json() };
}

beforeAll(async () => {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run the build first (npm test does).`);
  // The CLI beside the running gateway process, on its SQLite file.
  harness = await startTestGateway({ vendors: [] });
  gateway = harness.gateway;
  env = harness.env;
  databaseFile = harness.databaseUrl.slice('sqlite:'.length);
  const account = await gateway.accounts.create({ email: 'payer@example.com', password: 'a-long-enough-password' });
  accountId = account.id;
  key = (await gateway.keys.create(account.id, account.id, { name: 'cli-test' })).secret;
});

afterAll(async () => {
  await harness?.close();
});

describe('tollgate credit / codes / ledger', () => {
  it('credits an account exactly, from a decimal string', async () => {
    const credited = await cli(['credit', '--email', 'payer@example.com', '--usd', '12.5', '--note', 'invoice 42']);
    expect(credited).toMatchObject({
      code: 0,
      json: {
        account_id: accountId,
        email: 'payer@example.com',
        amount_usd: '12.5',
        amount_nano_usd: '12500000000',
        balance_usd: '12.5',
        balance_nano_usd: '12500000000',
        note: 'invoice 42',
      },
    });
    const tiny = await cli(['credit', '--email', 'PAYER@example.com', '--usd', '0.000000001']);
    expect(tiny.json).toMatchObject({ amount_nano_usd: '1', balance_usd: '12.500000001', note: null });
    expect((await gateway.storage.billing.balance(accountId))!.balanceNano).toBe(12_500_000_001n);

    const text = await cli(['credit', '--email', 'payer@example.com', '--usd', '1'], { json: false });
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/Credited \$1 to payer@example.com; balance now \$13\.500000001\./);
  });

  it('refuses bad amounts and unknown accounts with exit 1 and a clear message', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['credit', '--email', 'payer@example.com', '--usd', '0'], /more than 0/],
      [['credit', '--email', 'payer@example.com', '--usd=-5'], /decimal amount/],
      [['credit', '--email', 'payer@example.com', '--usd', '1e3'], /decimal amount/],
      [['credit', '--email', 'payer@example.com', '--usd', '0.0000000001'], /decimal amount/],
      [['credit', '--email', 'payer@example.com'], /--usd is required/],
      [['credit', '--usd', '5'], /--email or --organisation is required/],
      [['credit', '--email', 'payer@example.com', '--organisation', accountId, '--usd', '5'], /not both/],
      [['credit', '--email', 'nobody@example.com', '--usd', '5'], /No account/],
      [['codes', 'create', '--usd', '5'], /--count is required/],
      [['codes', 'create', '--usd', '5', '--count', '0'], /--count must be a whole number from 1 to 1000/],
      [['codes', 'create', '--usd', '5', '--count', '1001'], /--count/],
      [['codes', 'create', '--usd', '0', '--count', '1'], /more than 0/],
      [['ledger', 'show', '--email', 'payer@example.com', '--limit', 'x'], /--limit/],
    ];
    const results = await Promise.all(cases.map(([args]) => cli(args)));
    for (const [index, [args, message]] of cases.entries()) {
      const result = results[index]!;
      expect(result.code, args.join(' ')).toBe(1);
      expect(result.json.error, args.join(' ')).toMatch(message);
    }
    expect((await gateway.storage.billing.balance(accountId))!.balanceNano).toBe(13_500_000_001n);
  });

  it('mints redemption codes that redeem once over HTTP', async () => {
    const created = await cli(['codes', 'create', '--usd', '2.75', '--count', '3']);
    expect(created.code).toBe(0);
    expect(created.json).toMatchObject({ amount_usd: '2.75', amount_nano_usd: '2750000000' });
    expect(created.json.codes).toHaveLength(3);
    for (const code of created.json.codes) expect(code).toMatch(/^TG(-[0-9A-HJKMNP-TV-Z]{4}){4}$/);
    expect(new Set(created.json.codes).size).toBe(3);

    const first = await redeem(created.json.codes[0]);
    expect(first).toEqual({
      status: 200,
      json: {
        object: 'redemption',
        amount_usd: '2.75',
        amount_nano_usd: '2750000000',
        balance_usd: '16.250000001',
        balance_nano_usd: '16250000001',
      },
    });
    expect((await redeem(created.json.codes[0])).status).toBe(409);

    const text = await cli(['codes', 'create', '--usd', '1', '--count', '2'], { json: false });
    const lines = text.stdout.trim().split('\n');
    expect(lines.slice(0, 2).every((line) => /^TG(-[0-9A-HJKMNP-TV-Z]{4}){4}$/.test(line))).toBe(true);
    expect(lines[2]).toMatch(/2 codes worth \$1 each/);
  });

  it('shows the ledger with running balances', async () => {
    const shown = await cli(['ledger', 'show', '--email', 'payer@example.com', '--limit', '10']);
    expect(shown.code).toBe(0);
    expect(shown.json).toMatchObject({
      account_id: accountId,
      balance_usd: '16.250000001',
      balance_nano_usd: '16250000001',
    });
    expect(
      shown.json.entries.map((entry: { kind: string; amount_usd: string; balance_after_usd: string }) => [
        entry.kind,
        entry.amount_usd,
        entry.balance_after_usd,
      ]),
    ).toEqual([
      ['redemption', '2.75', '16.250000001'],
      ['topup', '1', '13.500000001'],
      ['topup', '0.000000001', '12.500000001'],
      ['topup', '12.5', '12.5'],
    ]);
    expect((await cli(['ledger', 'show', '--email', 'payer@example.com', '--limit', '1'])).json.entries).toHaveLength(
      1,
    );
  });

  it('ledger verify exits 0 when every balance equals its ledger, 1 (naming the account) when one does not', async () => {
    expect(await cli(['ledger', 'verify'])).toMatchObject({ code: 0, json: { ok: true, mismatches: [] } });
    expect((await cli(['ledger', 'verify'], { json: false })).stdout).toMatch(/Ledger OK/);

    // Corrupt the balance behind the gateway's back, as a bad manual fix would.
    const database = new Database(databaseFile);
    try {
      database.prepare('update organisations set balance_nano = balance_nano + 7 where id = ?').run(accountId);
      const broken = await cli(['ledger', 'verify']);
      expect(broken).toMatchObject({
        code: 1,
        json: {
          ok: false,
          mismatches: [{ account_id: accountId, balance_nano_usd: '16250000008', ledger_sum_nano_usd: '16250000001' }],
        },
      });
      const text = await cli(['ledger', 'verify'], { json: false });
      expect(text.code).toBe(1);
      expect(text.stdout).toContain(accountId);
    } finally {
      database.prepare('update organisations set balance_nano = balance_nano - 7 where id = ?').run(accountId);
      database.close();
    }
    expect((await cli(['ledger', 'verify'])).code).toBe(0);
  });
});
