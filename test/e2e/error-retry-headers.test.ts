/**
 * Every error reply says whether a retry can help, over real HTTP against the spawned gateway and its simulator:
 * `x-should-retry: false` on what no retry fixes (400, 401, 403, 404, 413), `x-should-retry: true` with
 * `retry-after` on what may pass later (429, 5xx, Anthropic's 529), on each protocol's routes and the dashboard's.
 * Anthropic replies carry the request's id as the `request-id` header and, on errors, the body's `request_id`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

let harness: TestGateway;
/** Funded, on the tier that allows one request a minute. */
let funded: string;
/** $0 and no free tokens. */
let broke: string;
/** Funded, on the ordinary tier. */
let spare: string;

beforeAll(async () => {
  harness = await startTestGateway({
    env: { FREE_TOKENS_PER_DAY: '0', BODY_LIMIT_BYTES: '100000' },
    yaml: 'tiers:\n  single: { requestsPerMinute: 1 }\n',
  });
  const fund = async (tier?: string) => {
    const { key, accountId } = await harness.createAccountWithKey(undefined, tier);
    await harness.gateway.storage.billing.credit({
      accountId,
      kind: 'topup',
      amountNano: parseUsd('10'),
      idempotencyKey: `t-${accountId}`,
      note: null,
      at: Date.now(),
    });
    return key;
  };
  funded = await fund('single');
  spare = await fund();
  ({ key: broke } = await harness.createAccountWithKey());
}, 60_000);

afterAll(async () => {
  await harness?.close();
});

interface Route {
  name: string;
  path: string;
  /** A valid request body whose prompt is `text`. */
  body(text: string): unknown;
  auth(key: string): Record<string, string>;
}

const ROUTES: Route[] = [
  {
    name: 'OpenAI chat',
    path: '/v1/chat/completions',
    body: (text) => ({ model: 'beta-5.4', messages: [{ role: 'user', content: text }] }),
    auth: (key) => ({ authorization: `Bearer ${key}` }),
  },
  {
    name: 'OpenAI Responses',
    path: '/v1/responses',
    body: (text) => ({ model: 'beta-5.4', input: text }),
    auth: (key) => ({ authorization: `Bearer ${key}` }),
  },
  {
    name: 'Anthropic',
    path: '/v1/messages',
    body: (text) => ({ model: 'alpha-sonnet-5', max_tokens: 50, messages: [{ role: 'user', content: text }] }),
    auth: (key) => ({ 'x-api-key': key, 'anthropic-version': '2023-06-01' }),
  },
  {
    name: 'Gemini',
    path: '/v1beta/models/gamma-2.5-pro:generateContent',
    body: (text) => ({ contents: [{ role: 'user', parts: [{ text }] }] }),
    auth: (key) => ({ 'x-goog-api-key': key }),
  },
];

async function post(route: Route, key: string, body: unknown, raw?: string): Promise<Response> {
  return fetch(`${harness.gateway.url}${route.path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...route.auth(key) },
    body: raw ?? JSON.stringify(body),
  });
}

function expectFinal(response: Response, status: number): void {
  expect(response.status).toBe(status);
  expect(response.headers.get('x-should-retry')).toBe('false');
  expect(response.headers.get('retry-after')).toBeNull();
}

function expectRetryable(response: Response, status: number): void {
  expect(response.status).toBe(status);
  expect(response.headers.get('x-should-retry')).toBe('true');
  expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
}

describe.each(ROUTES)('error retry headers on the $name route', (route) => {
  const anthropic = route.name === 'Anthropic';

  it('no retry for 400, 401, 403, 404 and 413', async () => {
    expectFinal(await post(route, spare, undefined, '{not json'), 400);
    expectFinal(await post(route, 'sk-not-a-key', route.body('hi')), 401);
    expectFinal(await post(route, broke, route.body('hi')), 403);
    const unknownPath = await fetch(`${harness.gateway.url}${route.path}/no/such/path`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...route.auth(spare) },
      body: '{}',
    });
    expectFinal(unknownPath, 404);
    expectFinal(await post(route, spare, route.body('x'.repeat(200_000))), 413);
  });

  it('retry after a while for a vendor 5xx', async () => {
    const response = await post(route, spare, route.body('Hello [[sim fault=error status=503]]'));
    expectRetryable(response, anthropic ? 529 : 503);
    const fault = await post(route, spare, route.body('Hello [[sim fault=error status=500]]'));
    expectRetryable(fault, 500);
  });

  it("retry after the rate limiter's own wait for a 429", async () => {
    // The funded key's tier allows one request a minute: the first may pass (or be refused by an earlier test), the
    // next is refused.
    await post(route, funded, route.body('hi'));
    const refused = await post(route, funded, route.body('hi'));
    expectRetryable(refused, 429);
    // The limiter's wait, the one its message names, not the default.
    const wait = /Try again in (\d+) s/.exec(await refused.text())?.[1];
    expect(refused.headers.get('retry-after')).toBe(wait);
  });
});

describe('request ids on the Anthropic route', () => {
  const messages = ROUTES.find((route) => route.name === 'Anthropic')!;

  it('an error body carries request_id, the same id as the request-id and x-request-id headers', async () => {
    for (const [key, status] of [
      ['sk-not-a-key', 401],
      [broke, 403],
    ] as const) {
      const response = await post(messages, key, messages.body('hi'));
      expect(response.status).toBe(status);
      const id = response.headers.get('x-request-id');
      expect(id).toMatch(/^req_[0-9a-f]{32}$/);
      expect(response.headers.get('request-id')).toBe(id);
      expect(((await response.json()) as { request_id: string }).request_id).toBe(id);
    }
  });

  it('an exhausted balance is a billing_error in the words Claude Code recognises, with how to top up', async () => {
    const response = await post(messages, broke, messages.body('hi'));
    expect(response.status).toBe(403);
    const body = (await response.json()) as { error: { type: string; message: string } };
    expect(body.error.type).toBe('billing_error');
    expect(body.error.message).toMatch(/^Credit balance is too low\. Insufficient balance: /);
    expect(body.error.message).toMatch(/Top up the balance in the dashboard/);
  });

  it('a successful reply and a token count carry request-id too', async () => {
    const answered = await post(messages, spare, messages.body('hi'));
    expect(answered.status).toBe(200);
    expect(answered.headers.get('request-id')).toBe(answered.headers.get('x-request-id'));
    const counted = await fetch(`${harness.gateway.url}/v1/messages/count_tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...messages.auth(spare) },
      body: JSON.stringify({ model: 'alpha-sonnet-5', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(counted.status).toBe(200);
    expect(counted.headers.get('request-id')).toMatch(/^req_/);
    expect(counted.headers.get('request-id')).toBe(counted.headers.get('x-request-id'));
  });
});

describe('the dashboard API', () => {
  it('says no retry on a 401 and 404', async () => {
    const unauthenticated = await fetch(`${harness.gateway.url}/api/keys`);
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.headers.get('x-should-retry')).toBe('false');
    const unknown = await fetch(`${harness.gateway.url}/api/nowhere`);
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('x-should-retry')).toBe('false');
  });
});
