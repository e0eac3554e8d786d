import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ANTHROPIC_PATHS,
  ANTHROPIC_SPECIAL_PATHS,
  ANTHROPIC_TEMPLATE,
  CREDENTIALS_PATHS,
  CREDENTIALS_TEMPLATE,
  hostileBody,
  hostileHeaders,
  KEY_PATHS,
  KEY_TEMPLATE,
  OPENAI_PATHS,
  OPENAI_SPECIAL_PATHS,
  OPENAI_TEMPLATE,
  rawRequestHead,
  RESPONSES_PATHS,
  RESPONSES_SPECIAL_PATHS,
  RESPONSES_TEMPLATE,
  type FuzzBody,
} from '../helpers/fuzz-generators.js';
import { rawExchange } from '../helpers/raw-http.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

/**
 * Property-based fuzzing of every public entry point with hostile bodies and headers: never a 5xx, never a
 * crash or a hang, never a change of state, and every error in the shape of the endpoint that was called.
 * Seeded, so a CI failure reproduces locally; FUZZ_SEED / FUZZ_RUNS override both for a longer hunt.
 */
const SEED = Number(process.env.FUZZ_SEED ?? 20_261_122);
const RUNS = Number(process.env.FUZZ_RUNS ?? 50);
const CASE_TIMEOUT_MS = 10_000;

let harness: TestGateway;
let apiKey: string;
let accountId: string;
let funded: { key: string; accountId: string };
let dashboard: { cookie: string; csrf: string; accountId: string };
let visitor: { cookie: string; csrf: string };
const prototypeKeysBefore = Object.getOwnPropertyNames(Object.prototype).sort();

async function dashboardSession(): Promise<{ cookie: string; csrf: string }> {
  const response = await fetch(`${harness.gateway.url}/api/session`);
  const { csrfToken } = (await response.json()) as { csrfToken: string };
  return { cookie: response.headers.get('set-cookie')!.split(';')[0]!, csrf: csrfToken };
}

beforeAll(async () => {
  // No free allowance and no balance: a request that happens to be valid is refused (403) before any upstream call.
  harness = await startTestGateway({
    env: { FREE_TOKENS_PER_DAY: '0' },
    yaml: 'tiers:\n  fuzz:\n    requestsPerMinute: 100000\n',
  });
  ({ key: apiKey, accountId } = await harness.createAccountWithKey(undefined, 'fuzz'));
  funded = await harness.createAccountWithKey(undefined, 'fuzz');
  await harness.gateway.storage.billing.credit({
    accountId: funded.accountId,
    kind: 'topup',
    amountNano: 1_000_000_000_000n,
    idempotencyKey: 'fuzz-topup',
    note: null,
    at: Date.now(),
  });
  visitor = await dashboardSession();
  const registered = await fetch(`${harness.gateway.url}/api/auth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie: visitor.cookie, 'x-csrf-token': visitor.csrf },
    body: JSON.stringify({ email: 'fuzz-dashboard@example.com', password: 'correct horse battery staple' }),
  });
  expect(registered.status).toBe(201);
  const session = (await registered.json()) as { csrfToken: string; account: { id: string } };
  dashboard = {
    cookie: registered.headers.get('set-cookie')!.split(';')[0]!,
    csrf: session.csrfToken,
    accountId: session.account.id,
  };
  // A fresh visitor token for the login/register cases (registering replaced the first one's session).
  visitor = await dashboardSession();
});

afterAll(async () => harness?.close());

/** Everything a hostile request must leave untouched. */
async function snapshot(): Promise<unknown> {
  const storage = harness.gateway.storage;
  return {
    balance: await storage.billing.balance(accountId),
    usage: (await storage.usage.listByAccount(accountId, 100)).length,
    ledger: (await storage.billing.ledger(accountId, 100)).length,
    accounts: (await storage.accounts.listWithBalances({ limit: 1_000 })).length,
    dashboardKeys: (await storage.apiKeys.listByAccount(dashboard.accountId)).length,
    apiKeys: (await storage.apiKeys.listByAccount(accountId)).length,
  };
}

type Shape = 'openai' | 'anthropic' | 'dashboard';

function expectErrorShape(shape: Shape, body: unknown): void {
  if (shape === 'openai') {
    expect(body).toMatchObject({ error: { message: expect.any(String), type: expect.any(String) } });
  } else if (shape === 'anthropic') {
    expect(body).toMatchObject({ type: 'error', error: { type: expect.any(String), message: expect.any(String) } });
  } else {
    expect(body).toMatchObject({ error: { code: expect.any(String), message: expect.any(String) } });
  }
}

async function send(path: string, headers: Record<string, string>, body: FuzzBody): Promise<Response> {
  return fetch(`${harness.gateway.url}${path}`, {
    method: 'POST',
    headers,
    body: body.payload,
    signal: AbortSignal.timeout(CASE_TIMEOUT_MS),
  });
}

/** One hostile request: refused with a 4xx in the endpoint's error shape. */
async function expectRefused(shape: Shape, response: Response, label: string): Promise<void> {
  const text = await response.text();
  const context = `${label} → ${response.status} ${text.slice(0, 300)}`;
  expect(response.status, context).toBeGreaterThanOrEqual(400);
  expect(response.status, context).toBeLessThan(500);
  expect(response.headers.get('content-type'), context).toMatch(/^application\/json/);
  expect(response.headers.get('x-request-id'), context).toMatch(/^req_[0-9a-f]{32}$/);
  let parsed: unknown;
  expect(() => (parsed = JSON.parse(text)), context).not.toThrow();
  expectErrorShape(shape, parsed);
}

const runOptions = (offset: number) => ({ seed: SEED + offset, numRuns: RUNS, endOnFailure: true });

describe('fuzzing the model endpoints', () => {
  it('POST /v1/chat/completions: hostile bodies and headers get a 4xx in the OpenAI shape and change nothing', async () => {
    const before = await snapshot();
    await fc.assert(
      fc.asyncProperty(
        hostileBody(OPENAI_TEMPLATE, OPENAI_PATHS, OPENAI_SPECIAL_PATHS),
        hostileHeaders({ authorization: `Bearer ${apiKey}` }),
        async (body, headers) => {
          await expectRefused('openai', await send('/v1/chat/completions', headers, body), body.kind);
        },
      ),
      runOptions(1),
    );
    expect(await snapshot()).toEqual(before);
  });

  it('POST /v1/messages: hostile bodies and headers get a 4xx in the Anthropic shape and change nothing', async () => {
    const before = await snapshot();
    await fc.assert(
      fc.asyncProperty(
        hostileBody(ANTHROPIC_TEMPLATE, ANTHROPIC_PATHS, ANTHROPIC_SPECIAL_PATHS),
        hostileHeaders({ 'x-api-key': apiKey, 'anthropic-version': '2023-06-01' }),
        async (body, headers) => {
          await expectRefused('anthropic', await send('/v1/messages', headers, body), body.kind);
        },
      ),
      runOptions(2),
    );
    expect(await snapshot()).toEqual(before);
  });

  it('POST /v1/responses: hostile bodies and headers get a 4xx in the OpenAI shape and change nothing', async () => {
    const before = await snapshot();
    await fc.assert(
      fc.asyncProperty(
        hostileBody(RESPONSES_TEMPLATE, RESPONSES_PATHS, RESPONSES_SPECIAL_PATHS),
        hostileHeaders({ authorization: `Bearer ${apiKey}` }),
        async (body, headers) => {
          await expectRefused('openai', await send('/v1/responses', headers, body), body.kind);
        },
      ),
      runOptions(7),
    );
    expect(await snapshot()).toEqual(before);
  });

  it('a funded account: whatever the body, never a 5xx, errors in the caller’s shape, the ledger stays balanced', async () => {
    const endpoint = fc.oneof(
      hostileBody(OPENAI_TEMPLATE, OPENAI_PATHS, OPENAI_SPECIAL_PATHS).map((body) => ({
        path: '/v1/chat/completions',
        shape: 'openai' as const,
        body,
      })),
      hostileBody(ANTHROPIC_TEMPLATE, ANTHROPIC_PATHS, ANTHROPIC_SPECIAL_PATHS).map((body) => ({
        path: '/v1/messages',
        shape: 'anthropic' as const,
        body,
      })),
      hostileBody(RESPONSES_TEMPLATE, RESPONSES_PATHS, RESPONSES_SPECIAL_PATHS).map((body) => ({
        path: '/v1/responses',
        shape: 'openai' as const,
        body,
      })),
    );
    await fc.assert(
      fc.asyncProperty(endpoint, async ({ path, shape, body }) => {
        const headers = { authorization: `Bearer ${funded.key}`, 'content-type': 'application/json' };
        const response = await send(path, headers, body);
        if (response.status < 400) {
          // A hostile value the protocol accepts (a string of odd characters, a huge but valid number): served.
          expect(response.status, body.kind).toBe(200);
          await response.arrayBuffer();
          return;
        }
        await expectRefused(shape, response, body.kind);
      }),
      runOptions(6),
    );
    const balance = await harness.gateway.storage.billing.balance(funded.accountId);
    expect(balance!.reservedNano).toBe(0n);
    expect(await harness.gateway.storage.billing.verifyLedger()).toEqual([]);
  });

  it('raw request heads with header injection, NUL bytes, folding and smuggling attempts: a 4xx, never an echo', async () => {
    const paths = ['/v1/chat/completions', '/v1/messages'] as const;
    await fc.assert(
      fc.asyncProperty(
        fc
          .constantFrom(...paths)
          .chain((path) => rawRequestHead(path, `Bearer ${apiKey}`).map((request) => ({ path, ...request }))),
        async ({ path, kind, head, body }) => {
          const raw = await rawExchange(harness.gateway.url, CASE_TIMEOUT_MS, `${head}\r\n\r\n${body}`);
          const context = `${kind} → ${raw.slice(0, 300)}`;
          const [responseHead = '', responseBody = ''] = raw.split('\r\n\r\n', 2);
          const status = Number(responseHead.split(' ')[1]);
          expect(status, context).toBeGreaterThanOrEqual(400);
          expect(status, context).toBeLessThan(500);
          expect(responseHead.toLowerCase(), context).not.toContain('injected');
          const parsed = JSON.parse(responseBody) as unknown;
          // The HTTP parser refuses what it cannot read in the shape of the path it could read, OpenAI's otherwise.
          if ((parsed as { type?: string }).type === 'error') expect(path).toBe('/v1/messages');
          expectErrorShape((parsed as { type?: string }).type === 'error' ? 'anthropic' : 'openai', parsed);
        },
      ),
      runOptions(3),
    );
  });
});

describe('fuzzing the dashboard API', () => {
  it('POST /api/auth/login and /api/auth/register: hostile bodies get a 4xx in the dashboard shape and create nothing', async () => {
    const before = await snapshot();
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('/api/auth/login', '/api/auth/register'),
        hostileBody(CREDENTIALS_TEMPLATE, CREDENTIALS_PATHS),
        async (path, body) => {
          const headers = { 'content-type': 'application/json', cookie: visitor.cookie, 'x-csrf-token': visitor.csrf };
          await expectRefused('dashboard', await send(path, headers, body), `${path} ${body.kind}`);
        },
      ),
      runOptions(4),
    );
    expect(await snapshot()).toEqual(before);
  });

  it('POST /api/keys (logged in): hostile bodies get a 4xx in the dashboard shape and create no key', async () => {
    const before = await snapshot();
    await fc.assert(
      fc.asyncProperty(hostileBody(KEY_TEMPLATE, KEY_PATHS), async (body) => {
        const headers = {
          'content-type': 'application/json',
          cookie: dashboard.cookie,
          'x-csrf-token': dashboard.csrf,
        };
        await expectRefused('dashboard', await send('/api/keys', headers, body), body.kind);
      }),
      runOptions(5),
    );
    expect(await snapshot()).toEqual(before);
  });
});

describe('after the fuzzing', () => {
  it('the gateway still serves, and no prototype was polluted', async () => {
    expect((await fetch(`${harness.gateway.url}/healthz`)).status).toBe(200);
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(prototypeKeysBefore);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(harness.logs.some((line) => line.includes('"level":50') || line.includes('"level":60'))).toBe(false);
  });
});
