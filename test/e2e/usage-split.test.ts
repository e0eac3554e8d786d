/**
 * Reported usage split by one rule (docs/billing.md#splitting-reported-usage), through the spawned gateway on SQLite
 * and on the real PostgreSQL, the simulated vendor reporting far more than the gateway estimated (`prompt-tokens=`,
 * `output-tokens=`): free allowance first, up to what is left of the day; then the balance; then the key's spend
 * limit; the rest unbilled, tokens and cost, on the usage record and the ledger line. Asserted where a user reads
 * it: the usage API, the ledger API, the account and key APIs, with the official OpenAI SDK as the caller.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import { ModelCatalog } from '../../src/catalog/model-catalog.js';
import { fundedAccountWithKey, startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const catalog = new ModelCatalog();
const DAILY_FREE = 1_000_000;

interface UsageRow {
  request_id: string;
  input_tokens: number;
  output_tokens: number;
  free_tokens: number;
  unbilled_tokens: number;
  unbilled_cost_nano_usd: string;
  cost_nano_usd: string;
}
interface LedgerLine {
  kind: string;
  amount_nano_usd: string;
  request_id: string | null;
  unbilled_tokens: number;
  unbilled_cost_nano_usd: string;
}

/** List price of a usage (no cache in these tests): what free, billed and unbilled must add up to. */
function listPrice(model: string, input: number, output: number): bigint {
  const { prices } = catalog.resolve(model);
  return BigInt(input) * prices.input + BigInt(output) * prices.output;
}

describe.each([{ database: 'sqlite' }, { database: 'postgres' }])('usage split on $database', ({ database }) => {
  let withAllowance: TestGateway;
  let withoutAllowance: TestGateway;

  beforeAll(async () => {
    [withAllowance, withoutAllowance] = await Promise.all([
      startTestGateway({ postgres: database === 'postgres', env: { FREE_TOKENS_PER_DAY: String(DAILY_FREE) } }),
      startTestGateway({ postgres: database === 'postgres', env: { FREE_TOKENS_PER_DAY: '0' } }),
    ]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all([withAllowance?.close(), withoutAllowance?.close()]);
  });

  function account(harness: TestGateway, usd: string) {
    return usd === '0' ? harness.createAccountWithKey(undefined, 'enterprise') : fundedAccountWithKey(harness, usd);
  }

  async function get<T>(harness: TestGateway, key: string, path: string): Promise<T> {
    const response = await fetch(`${harness.gateway.url}${path}`, { headers: { authorization: `Bearer ${key}` } });
    const text = await response.text();
    expect(response.status, text).toBe(200);
    return JSON.parse(text) as T;
  }

  /** One chat completion whose vendor reports `input` prompt and `output` completion tokens. */
  async function ask(harness: TestGateway, key: string, model: string, input: number, output: number) {
    const client = new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
    const { data, response } = await client.chat.completions
      .create({
        model,
        max_tokens: 50,
        messages: [
          { role: 'user', content: `Count this [[sim words=3 prompt-tokens=${input} output-tokens=${output}]]` },
        ],
      })
      .withResponse();
    expect(data.usage).toMatchObject({ prompt_tokens: input, completion_tokens: output });
    return response.headers.get('x-request-id')!;
  }

  async function usageRows(harness: TestGateway, key: string): Promise<Map<string, UsageRow>> {
    const page = await get<{ data: UsageRow[] }>(harness, key, '/v1/usage/requests?limit=100');
    return new Map(page.data.map((row) => [row.request_id, row]));
  }

  async function ledgerLines(harness: TestGateway, key: string): Promise<LedgerLine[]> {
    return (await get<{ data: LedgerLine[] }>(harness, key, '/v1/account/ledger?limit=100')).data;
  }

  async function balanceNano(harness: TestGateway, key: string): Promise<bigint> {
    const body = await get<{ balance: { nano_usd: string; reserved_nano_usd: string } }>(harness, key, '/v1/account');
    expect(body.balance.reserved_nano_usd).toBe('0');
    return BigInt(body.balance.nano_usd);
  }

  it('a $0 account: usage past the estimate is free while the day lasts, the rest unbilled, nothing lost', async () => {
    const model = 'gamma-2.5-pro';
    const { key } = await account(withAllowance, '0');
    const first = await ask(withAllowance, key, model, 525_016, 40);
    const second = await ask(withAllowance, key, model, 999_990, 10);

    const rows = await usageRows(withAllowance, key);
    // Far past the hold's estimate, all free: the day's allowance had room for it.
    expect(rows.get(first)).toMatchObject({ free_tokens: 525_056, unbilled_tokens: 0, cost_nano_usd: '0' });
    // What was left of the allowance, then nothing to charge: the rest unbilled, at list price.
    const left = DAILY_FREE - 525_056;
    const unbilled = 1_000_000 - left;
    expect(rows.get(second)).toMatchObject({
      input_tokens: 999_990,
      output_tokens: 10,
      free_tokens: left,
      unbilled_tokens: unbilled,
      unbilled_cost_nano_usd: listPrice(model, unbilled - 10, 10).toString(),
      cost_nano_usd: '0',
    });
    for (const row of rows.values()) {
      expect(row.free_tokens + row.unbilled_tokens).toBe(row.input_tokens + row.output_tokens);
    }

    // The ledger shows the shortfall though nothing was charged; the balance never went below zero.
    expect(await ledgerLines(withAllowance, key)).toEqual([
      expect.objectContaining({
        kind: 'usage',
        amount_nano_usd: '0',
        request_id: second,
        unbilled_tokens: unbilled,
        unbilled_cost_nano_usd: listPrice(model, unbilled - 10, 10).toString(),
      }),
    ]);
    expect(await balanceNano(withAllowance, key)).toBe(0n);
    // The day's summary (the rollup) carries the shortfall too.
    const summary = await get<{ total: Record<string, unknown> }>(withAllowance, key, '/v1/usage');
    expect(summary.total).toMatchObject({
      requests: 2,
      unbilled_tokens: unbilled,
      unbilled_cost_nano_usd: listPrice(model, unbilled - 10, 10).toString(),
      cost_nano_usd: '0',
    });
    const allowance = await get<{ free_allowance: { used_today: number; left_today: number } }>(
      withAllowance,
      key,
      '/v1/account',
    );
    expect(allowance.free_allowance).toMatchObject({ used_today: DAILY_FREE, left_today: 0 });
  });

  it('a $5 account: the free tokens left are used first, only the rest is charged', async () => {
    const model = 'gamma-2.5-pro';
    const { key } = await account(withAllowance, '5');
    const first = await ask(withAllowance, key, model, 600_000, 10);
    const second = await ask(withAllowance, key, model, 600_000, 10);

    const rows = await usageRows(withAllowance, key);
    expect(rows.get(first)).toMatchObject({ free_tokens: 600_010, unbilled_tokens: 0, cost_nano_usd: '0' });
    const free = DAILY_FREE - 600_010;
    const charge = listPrice(model, 600_000 - free, 10);
    expect(rows.get(second)).toMatchObject({
      free_tokens: free,
      unbilled_tokens: 0,
      unbilled_cost_nano_usd: '0',
      cost_nano_usd: charge.toString(),
    });
    expect(await ledgerLines(withAllowance, key)).toContainEqual(
      expect.objectContaining({ kind: 'usage', request_id: second, amount_nano_usd: (-charge).toString() }),
    );
    expect(await balanceNano(withAllowance, key)).toBe(parseUsd('5') - charge);
  });

  it("a key's daily spend limit holds against concurrent requests that cost more than their holds", async () => {
    const model = 'beta-5.4';
    const limit = parseUsd('0.05');
    const { key } = await account(withoutAllowance, '5');
    const created = await fetch(`${withoutAllowance.gateway.url}/v1/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'capped', spend_limit: { usd: '0.05', period: 'day' } }),
    });
    const capped = (await created.json()) as { key: string; id: string };
    expect(created.status).toBe(201);

    // Each hold is about $0.0008 (a short prompt, 50 output tokens); each reply reports $0.0078: 40 at once would
    // spend $0.31 if nothing capped them. Those admitted after the limit is spent are refused (402).
    const results = await Promise.allSettled(
      Array.from({ length: 40 }, () => ask(withoutAllowance, capped.key, model, 3_000, 20)),
    );
    const answered = results.filter((result) => result.status === 'fulfilled').length;
    // More were admitted than the limit pays for at the reported price: the cap had work to do.
    expect(BigInt(answered) * listPrice(model, 3_000, 20)).toBeGreaterThan(limit);

    const rows = [...(await usageRows(withoutAllowance, key)).values()];
    const failures = results.flatMap((result) =>
      result.status === 'rejected' && !String(result.reason).includes('403') ? [String(result.reason)] : [],
    );
    expect(rows, failures.join('\n')).toHaveLength(answered);
    let spent = 0n;
    for (const row of rows) {
      // Billed and unbilled add up to the list price of what the vendor reported (nothing free here).
      expect(BigInt(row.cost_nano_usd) + BigInt(row.unbilled_cost_nano_usd)).toBe(listPrice(model, 3_000, 20));
      expect(row.free_tokens).toBe(0);
      spent += BigInt(row.cost_nano_usd);
    }
    expect(rows.some((row) => row.unbilled_tokens > 0)).toBe(true);
    expect(spent).toBeLessThanOrEqual(limit);
    // Charged up to the limit, short of it by less than one output token's price.
    expect(spent).toBeGreaterThan(limit - catalog.resolve(model).prices.output);

    const keys = await get<{
      data: Array<{ id: string; spend_limit: { spent_usd: string; held_usd: string } | null }>;
    }>(withoutAllowance, key, '/v1/keys');
    const limited = keys.data.find((entry) => entry.id === capped.id)!;
    expect(parseUsd(limited.spend_limit!.spent_usd)).toBe(spent);
    expect(limited.spend_limit!.held_usd).toBe('0');
    expect(await balanceNano(withoutAllowance, key)).toBe(parseUsd('5') - spent);
    const lines = await ledgerLines(withoutAllowance, key);
    expect(lines.filter((line) => line.kind === 'usage').reduce((sum, line) => sum + line.unbilled_tokens, 0)).toBe(
      rows.reduce((sum, row) => sum + row.unbilled_tokens, 0),
    );
  });
});
