import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import { createRedemptionCodes } from '../../src/billing/redemption-codes.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

/** The default free allowance (1M tokens a day): requests cost nothing until it runs out. */
let harness: TestGateway;
/** No free allowance: every request is charged, so costs and the ledger can be checked to the nano-USD. */
let paid: TestGateway;

beforeAll(async () => {
  [harness, paid] = await Promise.all([startTestGateway(), startTestGateway({ env: { FREE_TOKENS_PER_DAY: '0' } })]);
});

afterAll(async () => {
  await Promise.all([harness?.close(), paid?.close()]);
});

const PROMPT = [{ role: 'user' as const, content: 'Say something short.' }];
const DAY_MS = 86_400_000;

async function api(
  gateway: TestGateway,
  key: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: any }> {
  const response = await fetch(`${gateway.gateway.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, json: await response.json() };
}

/** A chat completion through the official SDK; returns the gateway's request id. */
async function chat(gateway: TestGateway, key: string, model = 'beta-5.4'): Promise<string> {
  const client = new OpenAI({ apiKey: key, baseURL: gateway.openaiBaseUrl, maxRetries: 0 });
  const { data, response } = await client.chat.completions
    .create({ model, messages: PROMPT, max_tokens: 64 })
    .withResponse();
  expect(data.choices[0]!.message.content).toBeTruthy();
  return response.headers.get('x-request-id')!;
}

async function credit(
  gateway: TestGateway,
  accountId: string,
  usd: string,
  key = `topup:test-${accountId}-${usd}`,
): Promise<void> {
  const result = await gateway.gateway.storage.billing.credit({
    accountId,
    kind: 'topup',
    amountNano: parseUsd(usd),
    idempotencyKey: key,
    note: 'test',
    at: Date.now(),
  });
  expect(result.applied).toBe(true);
}

describe('GET /v1/account', () => {
  it('shows the balance exactly, in USD and nano-USD, and the free allowance of today', async () => {
    const { key, accountId } = await harness.createAccountWithKey();
    const fresh = await api(harness, key, 'GET', '/v1/account');
    expect(fresh.status).toBe(200);
    expect(fresh.json.balance).toEqual({
      usd: '0',
      nano_usd: '0',
      reserved_usd: '0',
      reserved_nano_usd: '0',
      available_usd: '0',
      available_nano_usd: '0',
      requests_in_flight: 0,
    });

    await credit(harness, accountId, '12.345678901');
    await credit(harness, accountId, '0.000000001');
    const account = await api(harness, key, 'GET', '/v1/account');
    expect(account.json).toMatchObject({
      object: 'account',
      id: accountId,
      tier: 'standard',
      balance: {
        usd: '12.345678902',
        nano_usd: '12345678902',
        reserved_usd: '0',
        reserved_nano_usd: '0',
        available_usd: '12.345678902',
        available_nano_usd: '12345678902',
        requests_in_flight: 0,
      },
      free_allowance: {
        tokens_per_day: 1_000_000,
        used_today: 0,
        reserved_today: 0,
        left_today: 1_000_000,
        resets_at: new Date((Math.floor(Date.now() / DAY_MS) + 1) * DAY_MS).toISOString(),
      },
      rate_limits: { requests_per_minute: 100 },
    });
  });

  it('spends the free allowance before money: a request on a zero balance is free and counted', async () => {
    const { key } = await harness.createAccountWithKey();
    const requestId = await chat(harness, key);
    const account = await api(harness, key, 'GET', '/v1/account');
    expect(account.json.balance.nano_usd).toBe('0');
    const { used_today: used, reserved_today: reserved, left_today: left } = account.json.free_allowance;
    expect(used).toBeGreaterThan(0);
    expect(reserved).toBe(0);
    expect(left).toBe(1_000_000 - used);

    const records = await api(harness, key, 'GET', '/v1/usage/requests');
    expect(records.json.data).toHaveLength(1);
    expect(records.json.data[0]).toMatchObject({
      request_id: requestId,
      cost_usd: '0',
      cost_nano_usd: '0',
      status: 'ok',
    });
    const record = records.json.data[0];
    expect(record.free_tokens).toBe(used);
    expect(record.free_tokens).toBe(
      record.input_tokens + record.cache_read_tokens + record.cache_write_tokens + record.output_tokens,
    );
  });
});

describe('POST /v1/account/redeem', () => {
  it('credits a code once; a second use is 409, an unknown code 404, and failures change nothing', async () => {
    const alice = await harness.createAccountWithKey();
    const bob = await harness.createAccountWithKey();
    const [code, spare] = await createRedemptionCodes(harness.gateway.storage.billing, parseUsd('5.25'), 2, Date.now());
    await credit(harness, alice.accountId, '1');

    const redeemed = await api(harness, alice.key, 'POST', '/v1/account/redeem', {
      code: code!.toLowerCase().replaceAll('-', ' '),
    });
    expect(redeemed).toEqual({
      status: 200,
      json: {
        object: 'redemption',
        amount_usd: '5.25',
        amount_nano_usd: '5250000000',
        balance_usd: '6.25',
        balance_nano_usd: '6250000000',
      },
    });

    const again = await api(harness, alice.key, 'POST', '/v1/account/redeem', { code });
    expect(again.status).toBe(409);
    expect(again.json.error).toMatchObject({
      message: 'This redemption code has already been redeemed.',
      param: 'code',
    });
    const byBob = await api(harness, bob.key, 'POST', '/v1/account/redeem', { code });
    expect(byBob.status).toBe(409);
    const unknown = await api(harness, alice.key, 'POST', '/v1/account/redeem', { code: 'TG-0000-0000-0000-0000' });
    expect(unknown.status).toBe(404);
    expect(unknown.json.error.message).toBe('This redemption code does not exist.');
    const malformed = await api(harness, alice.key, 'POST', '/v1/account/redeem', { code: 'free money' });
    expect(malformed.status).toBe(400);
    expect(malformed.json.error.param).toBe('code');
    expect((await api(harness, alice.key, 'POST', '/v1/account/redeem', {})).json.error.param).toBe('code');
    expect((await api(harness, alice.key, 'POST', '/v1/account/redeem', { code, extra: 1 })).status).toBe(400);

    expect((await api(harness, alice.key, 'GET', '/v1/account')).json.balance.nano_usd).toBe('6250000000');
    expect((await api(harness, bob.key, 'GET', '/v1/account')).json.balance.nano_usd).toBe('0');

    const ledger = await api(harness, alice.key, 'GET', '/v1/account/ledger');
    expect(ledger.status).toBe(200);
    expect(ledger.json.data.map((entry: { kind: string }) => entry.kind)).toEqual(['redemption', 'topup']);
    expect(ledger.json.data[0]).toMatchObject({
      object: 'ledger_entry',
      amount_usd: '5.25',
      amount_nano_usd: '5250000000',
      balance_after_usd: '6.25',
    });
    expect(await harness.gateway.storage.billing.ledger(bob.accountId, 10)).toEqual([]);

    // The spare code still works, for Bob.
    expect((await api(harness, bob.key, 'POST', '/v1/account/redeem', { code: spare })).json.balance_usd).toBe('5.25');
    expect(await harness.gateway.storage.billing.verifyLedger()).toEqual([]);
  });
});

describe('usage API', () => {
  let key: string;
  let keyId: string;
  let otherKey: string;
  let otherKeyId: string;
  const requestIds: string[] = [];

  beforeAll(async () => {
    const account = await paid.createAccountWithKey();
    key = account.key;
    keyId = account.keyId;
    const other = await paid.gateway.keys.create(account.accountId, account.accountId, { name: 'second' });
    otherKey = other.secret;
    otherKeyId = other.record.id;
    await credit(paid, account.accountId, '10');
    // Sequential, so creation order is the newest-first order the API pages through.
    for (let index = 0; index < 3; index += 1) requestIds.push(await chat(paid, key, 'beta-5.4'));
    for (let index = 0; index < 2; index += 1) requestIds.push(await chat(paid, otherKey, 'delta-v4-flash'));
  });

  it('groups tokens and cost by model, key and day, with totals that add up', async () => {
    const byModel = await api(paid, key, 'GET', '/v1/usage?group_by=model');
    expect(byModel.status).toBe(200);
    expect(byModel.json).toMatchObject({ object: 'list', group_by: 'model' });
    expect(byModel.json.data.map((row: { group: string; requests: number }) => [row.group, row.requests])).toEqual([
      ['beta-5.4', 3],
      ['delta-v4-flash', 2],
    ]);
    for (const row of byModel.json.data) {
      expect(BigInt(row.cost_nano_usd)).toBeGreaterThan(0n);
      expect(row.input_tokens).toBeGreaterThan(0);
      expect(row.output_tokens).toBeGreaterThan(0);
    }
    const total = byModel.json.total;
    expect(total.requests).toBe(5);
    expect(total).not.toHaveProperty('group');
    for (const field of [
      'input_tokens',
      'cache_read_tokens',
      'cache_write_tokens',
      'cache_write_1h_tokens',
      'output_tokens',
      'reasoning_tokens',
    ]) {
      expect(total[field]).toBe(
        byModel.json.data.reduce((sum: number, row: Record<string, number>) => sum + row[field]!, 0),
      );
    }
    expect(BigInt(total.cost_nano_usd)).toBe(
      byModel.json.data.reduce((sum: bigint, row: { cost_nano_usd: string }) => sum + BigInt(row.cost_nano_usd), 0n),
    );

    const byKey = await api(paid, key, 'GET', '/v1/usage?group_by=key');
    expect(
      Object.fromEntries(byKey.json.data.map((row: { group: string; requests: number }) => [row.group, row.requests])),
    ).toEqual({ [keyId]: 3, [otherKeyId]: 2 });
    expect(byKey.json.total).toEqual(total);

    const byDay = await api(paid, key, 'GET', '/v1/usage');
    expect(byDay.json.group_by).toBe('day');
    expect(byDay.json.data).toEqual([{ group: new Date().toISOString().slice(0, 10), ...total }]);
    expect(Date.parse(byDay.json.to) - Date.parse(byDay.json.from)).toBe(30 * DAY_MS);

    // Money adds up to the nano-USD: balance = top-up − every request's cost, and the ledger agrees.
    const account = await api(paid, key, 'GET', '/v1/account');
    expect(account.json.balance.nano_usd).toBe((10_000_000_000n - BigInt(total.cost_nano_usd)).toString());
    expect(account.json.balance.reserved_nano_usd).toBe('0');
    const ledger = await api(paid, key, 'GET', '/v1/account/ledger?limit=100');
    expect(ledger.json.data.map((entry: { kind: string }) => entry.kind)).toEqual([
      'usage',
      'usage',
      'usage',
      'usage',
      'usage',
      'topup',
    ]);
    expect(ledger.json.data[0].balance_after_nano_usd).toBe(account.json.balance.nano_usd);
    const oldestFirst = [...ledger.json.data].reverse();
    oldestFirst.reduce((before: bigint, entry: { amount_nano_usd: string; balance_after_nano_usd: string }) => {
      expect(BigInt(entry.balance_after_nano_usd)).toBe(before + BigInt(entry.amount_nano_usd));
      return BigInt(entry.balance_after_nano_usd);
    }, 0n);
    expect(
      ledger.json.data
        .filter((entry: { kind: string }) => entry.kind === 'usage')
        .map((entry: { request_id: string }) => entry.request_id)
        .sort(),
    ).toEqual([...requestIds].sort());
  });

  it('filters by time range: ISO dates, date-times and Unix seconds', async () => {
    const tomorrow = new Date((Math.floor(Date.now() / DAY_MS) + 1) * DAY_MS).toISOString().slice(0, 10);
    const today = new Date().toISOString().slice(0, 10);
    const inside = await api(paid, key, 'GET', `/v1/usage?from=${today}&to=${tomorrow}&group_by=model`);
    expect(inside.json.total.requests).toBe(5);
    expect(inside.json.from).toBe(`${today}T00:00:00.000Z`);

    const seconds = Math.floor(Date.now() / 1000);
    const future = await api(paid, key, 'GET', `/v1/usage?from=${seconds + 3600}&to=${seconds + 7200}`);
    expect(future.status).toBe(200);
    expect(future.json.data).toEqual([]);
    expect(future.json.total).toEqual({
      requests: 0,
      input_tokens: 0,
      cache_read_tokens: 0,
      cache_write_tokens: 0,
      cache_write_1h_tokens: 0,
      output_tokens: 0,
      reasoning_tokens: 0,
      cost_usd: '0',
      cost_nano_usd: '0',
      unbilled_tokens: 0,
      unbilled_cost_usd: '0',
      unbilled_cost_nano_usd: '0',
    });
    const past = await api(
      paid,
      key,
      'GET',
      `/v1/usage?to=${encodeURIComponent(new Date(Date.now() - DAY_MS).toISOString())}`,
    );
    expect(past.json.total.requests).toBe(0);
    const withZone = await api(paid, key, 'GET', `/v1/usage?from=${encodeURIComponent(`${today}T00:00:00+00:00`)}`);
    expect(withZone.json.total.requests).toBe(5);
  });

  it('rejects bad parameters with a 400 naming them', async () => {
    const cases: Array<[string, string]> = [
      ['/v1/usage?from=yesterday', 'from'],
      ['/v1/usage?to=2025-02-30', 'to'],
      ['/v1/usage?from=2025-01-01T10:00:00', 'from'],
      ['/v1/usage?group_by=week', 'group_by'],
      ['/v1/usage?from=2025-02-01&to=2025-01-01', 'from'],
      ['/v1/usage/requests?limit=0', 'limit'],
      ['/v1/usage/requests?limit=101', 'limit'],
      ['/v1/usage/requests?limit=ten', 'limit'],
      ['/v1/usage/requests?cursor=not-a-cursor', 'cursor'],
      [`/v1/usage/requests?cursor=${Buffer.from('yesterday:req_1').toString('base64url')}`, 'cursor'],
      ['/v1/account/ledger?limit=1000', 'limit'],
    ];
    for (const [path, param] of cases) {
      const response = await api(paid, key, 'GET', path);
      expect(response.status, path).toBe(400);
      expect(response.json.error.param, path).toBe(param);
      expect(response.json.error.message, path).toContain(`'${param}'`);
    }
  });

  it('pages through recent requests, newest first, with an opaque cursor', async () => {
    const all = await api(paid, key, 'GET', '/v1/usage/requests?limit=100');
    expect(all.json).toMatchObject({ object: 'list', has_more: false, next_cursor: null });
    expect(all.json.data.map((record: { request_id: string }) => record.request_id)).toEqual([...requestIds].reverse());
    expect(all.json.data[0]).toMatchObject({
      request_id: requestIds[4],
      model: 'delta-v4-flash',
      family: expect.any(String),
      api_key_id: otherKeyId,
      status: 'ok',
      stream: false,
      free_tokens: 0,
    });
    for (const record of all.json.data) {
      expect(Number.isNaN(Date.parse(record.created_at))).toBe(false);
      expect(record.latency_ms).toBeGreaterThanOrEqual(0);
      expect(BigInt(record.cost_nano_usd)).toBeGreaterThan(0n);
    }
    const summary = await api(paid, key, 'GET', '/v1/usage?group_by=model');
    expect(
      all.json.data
        .reduce((sum: bigint, record: { cost_nano_usd: string }) => sum + BigInt(record.cost_nano_usd), 0n)
        .toString(),
    ).toBe(summary.json.total.cost_nano_usd);

    const pages: Array<{ data: Array<{ request_id: string }>; has_more: boolean; next_cursor: string | null }> = [];
    let cursor: string | null = null;
    do {
      const page: { status: number; json: any } = await api(
        paid,
        key,
        'GET',
        `/v1/usage/requests?limit=2${cursor === null ? '' : `&cursor=${cursor}`}`,
      );
      expect(page.status).toBe(200);
      pages.push(page.json);
      cursor = page.json.next_cursor;
    } while (cursor !== null);
    expect(pages.map((page) => [page.data.length, page.has_more])).toEqual([
      [2, true],
      [2, true],
      [1, false],
    ]);
    expect(pages.flatMap((page) => page.data)).toEqual(all.json.data);

    const defaultPage = await api(paid, key, 'GET', '/v1/usage/requests');
    expect(defaultPage.json.data).toHaveLength(5);
  });

  it('shows an account only its own usage', async () => {
    const stranger = await paid.createAccountWithKey();
    expect((await api(paid, stranger.key, 'GET', '/v1/usage/requests')).json).toEqual({
      object: 'list',
      data: [],
      has_more: false,
      next_cursor: null,
    });
    expect((await api(paid, stranger.key, 'GET', '/v1/usage')).json.data).toEqual([]);
    expect((await api(paid, stranger.key, 'GET', '/v1/account/ledger')).json.data).toEqual([]);
  });

  it('pages through the ledger with before', async () => {
    const first = await api(paid, key, 'GET', '/v1/account/ledger?limit=4');
    expect(first.json.data).toHaveLength(4);
    expect(first.json.has_more).toBe(true);
    const second = await api(paid, key, 'GET', `/v1/account/ledger?limit=4&before=${first.json.next_before}`);
    expect(second.json).toMatchObject({ has_more: false, next_before: null });
    expect(second.json.data.map((entry: { kind: string }) => entry.kind)).toEqual(['usage', 'topup']);
  });

  it('requires an API key', async () => {
    for (const path of ['/v1/usage', '/v1/usage/requests', '/v1/account/ledger']) {
      expect((await fetch(`${paid.gateway.url}${path}`)).status).toBe(401);
    }
    expect(
      (
        await fetch(`${paid.gateway.url}/v1/account/redeem`, {
          method: 'POST',
          body: '{}',
          headers: { 'content-type': 'application/json' },
        })
      ).status,
    ).toBe(401);
  });
});
