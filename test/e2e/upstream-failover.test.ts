import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import { ModelCatalog } from '../../src/catalog/model-catalog.js';
import { startSimulator, type RunningSimulator } from '../../src/simulator/simulator-server.js';
import { spawnGateway, startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

/**
 * Credential pools: two credentials per vendor, one of them failing (the simulator's `only-key=` fault, or a
 * base URL nobody listens on). Every request must succeed, and the failing credential must be cooled down
 * and shown as such in /metrics. Also the per-model fallback, which is off unless configured.
 */

/**
 * Each request below is a conversation of its own, pinned to the credential its hash ranks first: enough of them
 * that every credential is some conversations' first choice (a failing one fewer than twice: about a 1-in-670,000 draw).
 */
const CONVERSATIONS = 24;

const POOL_SETTINGS = `
    retries: { maxAttempts: 3, baseDelayMs: 10, maxDelayMs: 200 }
    circuitBreaker: { failureThreshold: 2, cooldownMs: 60000 }`;

async function metricsText(harness: TestGateway): Promise<string> {
  const response = await fetch(`${harness.gateway.url}/metrics`);
  expect(response.status).toBe(200);
  return response.text();
}

function coolingGauge(text: string, vendor: string, credential: string): string | undefined {
  const line = text
    .split('\n')
    .find(
      (row) =>
        row.startsWith('tollgate_upstream_credential_cooling_down{') &&
        row.includes(`vendor="${vendor}"`) &&
        row.includes(`credential="${credential}"`),
    );
  return line?.split(' ').at(-1);
}

async function fundedKey(harness: TestGateway): Promise<{ key: string; accountId: string }> {
  const account = await harness.createAccountWithKey(undefined, 'enterprise');
  await harness.gateway.storage.billing.credit({
    accountId: account.accountId,
    kind: 'topup',
    amountNano: parseUsd('10'),
    idempotencyKey: `t-${account.accountId}`,
    note: null,
    at: Date.now(),
  });
  return account;
}

describe('failover between credentials of one vendor', () => {
  let harness: TestGateway;
  let openai: OpenAI;
  let anthropic: Anthropic;
  let accountId: string;

  beforeAll(async () => {
    harness = await startTestGateway({
      yaml: `
vendors:
  openai:
    credentials: [{ apiKey: sk-good, label: good }, { apiKey: sk-bad, label: bad }]${POOL_SETTINGS}
  anthropic:
    credentials: [{ apiKey: ak-bad, label: bad }, { apiKey: ak-good, label: good }]${POOL_SETTINGS}
`,
      env: { FREE_TOKENS_PER_DAY: '0' },
    });
    const account = await fundedKey(harness);
    accountId = account.accountId;
    openai = new OpenAI({ apiKey: account.key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
    anthropic = new Anthropic({ apiKey: account.key, baseURL: harness.gateway.url, maxRetries: 0 });
  });

  afterAll(async () => {
    await harness?.close();
  });

  async function askBoth(directive: string, index: number): Promise<void> {
    const content = `Request ${index} ${directive}`;
    const stream = index % 2 === 1;
    if (stream) {
      let text = '';
      for await (const chunk of await openai.chat.completions.create({
        model: 'beta-5.4',
        stream: true,
        messages: [{ role: 'user', content }],
      })) {
        text += chunk.choices[0]?.delta.content ?? '';
      }
      expect(text.length).toBeGreaterThan(0);
      const message = await anthropic.messages
        .stream({ model: 'alpha-haiku-4-5', max_tokens: 200, messages: [{ role: 'user', content }] })
        .finalMessage();
      expect(message.stop_reason).toBe('end_turn');
    } else {
      const completion = await openai.chat.completions.create({
        model: 'beta-5.4',
        messages: [{ role: 'user', content }],
      });
      expect(completion.choices[0]!.message.content!.length).toBeGreaterThan(0);
      const message = await anthropic.messages.create({
        model: 'alpha-haiku-4-5',
        max_tokens: 200,
        messages: [{ role: 'user', content }],
      });
      expect(message.content[0]!.type).toBe('text');
    }
  }

  it('one credential answering 500: every request succeeds, the failing one is cooled down and shown in /metrics', async () => {
    const before = await metricsText(harness);
    expect(coolingGauge(before, 'openai', 'bad')).toBe('0');
    for (let index = 0; index < CONVERSATIONS; index++) {
      await askBoth('[[sim error status=500 only-key=sk-bad,ak-bad]]', index);
    }
    const after = await metricsText(harness);
    expect(coolingGauge(after, 'openai', 'bad')).toBe('1');
    expect(coolingGauge(after, 'openai', 'good')).toBe('0');
    expect(coolingGauge(after, 'anthropic', 'bad')).toBe('1');
    expect(coolingGauge(after, 'anthropic', 'good')).toBe('0');
    expect(after).toMatch(/tollgate_upstream_retries_total\{vendor="openai"\} [1-9]/);
    // Two requests per conversation, each settled once and charged once: nothing held, ledger = balance.
    const rows = await harness.gateway.storage.usage.listByAccount(accountId, 100);
    expect(rows.filter((row) => row.status === 'ok')).toHaveLength(2 * CONVERSATIONS);
    expect((await harness.gateway.storage.billing.balance(accountId))!.reservedNano).toBe(0n);
    expect(await harness.gateway.storage.billing.verifyLedger()).toEqual([]);
  });

  it('a cooled-down credential gets no traffic: a fault only it would hit is never seen', async () => {
    // `bad` is cooling down from the previous test; were it used, this request would fail (it is not retried).
    const completion = await openai.chat.completions.create({
      model: 'beta-5.4',
      messages: [{ role: 'user', content: 'Hi [[sim error status=400 only-key=sk-bad]]' }],
    });
    expect(completion.choices[0]!.message.content!.length).toBeGreaterThan(0);
  });
});

describe('failover on refused credentials, rate limits and dead endpoints', () => {
  let simulator: RunningSimulator;
  let harness: TestGateway;
  let openai: OpenAI;
  let anthropic: Anthropic;

  beforeAll(async () => {
    simulator = await startSimulator({ apiKeys: ['sk-live', 'ak-live', 'sk-limited'] });
    harness = await startTestGateway({
      vendors: [],
      yaml: `
vendors:
  openai:
    baseUrl: ${simulator.baseUrls.openai}
    credentials:
      - { apiKey: sk-revoked, label: revoked }
      - { apiKey: sk-limited, label: limited }
      - { apiKey: sk-live, label: live }${POOL_SETTINGS}
  anthropic:
    credentials:
      - { apiKey: ak-live, baseUrl: "http://127.0.0.1:9", label: dead }
      - { apiKey: ak-live, baseUrl: "${simulator.baseUrls.anthropic}", label: live }${POOL_SETTINGS}
`,
    });
    const { key } = await fundedKey(harness);
    openai = new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
    anthropic = new Anthropic({ apiKey: key, baseURL: harness.gateway.url, maxRetries: 0 });
  });

  afterAll(async () => {
    await harness?.close();
    await simulator?.close();
  });

  it('a revoked key (401) and a rate-limited one (429, long retry-after) are skipped: every request succeeds', async () => {
    for (let index = 0; index < CONVERSATIONS; index++) {
      const completion = await openai.chat.completions.create({
        model: 'beta-5.4',
        messages: [{ role: 'user', content: `Hi ${index} [[sim rate-limit retry-after=60 only-key=sk-limited]]` }],
      });
      expect(completion.choices[0]!.message.content!.length).toBeGreaterThan(0);
    }
    const text = await metricsText(harness);
    expect(coolingGauge(text, 'openai', 'revoked')).toBe('1');
    expect(coolingGauge(text, 'openai', 'limited')).toBe('1');
    expect(coolingGauge(text, 'openai', 'live')).toBe('0');
  });

  it('a base URL nobody listens on: every request succeeds through the other endpoint', async () => {
    for (let index = 0; index < CONVERSATIONS; index++) {
      const message = await anthropic.messages.create({
        model: 'alpha-haiku-4-5',
        max_tokens: 100,
        messages: [{ role: 'user', content: `Hi ${index}` }],
      });
      expect(message.content[0]!.type).toBe('text');
    }
    const text = await metricsText(harness);
    expect(coolingGauge(text, 'anthropic', 'dead')).toBe('1');
    expect(text).toMatch(/tollgate_upstream_errors_total\{vendor="anthropic",reason="connect"\} [1-9]/);
  });
});

describe('per-model fallback', () => {
  let harness: TestGateway;
  let accountId: string;
  let openai: OpenAI;

  beforeAll(async () => {
    harness = await startTestGateway({
      env: { ANTHROPIC_BASE_URL: 'http://127.0.0.1:9', FREE_TOKENS_PER_DAY: '0' },
      yaml: `
vendors:
  anthropic:
    retries: { maxAttempts: 1 }
models:
  alpha-haiku-4-5: { fallback: beta-5.4 }
`,
    });
    const account = await fundedKey(harness);
    accountId = account.accountId;
    openai = new OpenAI({ apiKey: account.key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
  });

  afterAll(async () => {
    await harness?.close();
  });

  it("a model whose vendor is down is answered by the operator's fallback, billed once at the fallback's prices", async () => {
    const completion = await openai.chat.completions.create({
      model: 'alpha-haiku-4-5',
      messages: [{ role: 'user', content: 'Hello' }],
    });
    expect(completion.model).toBe('beta-5.4');
    expect(completion.choices[0]!.message.content!.length).toBeGreaterThan(0);
    const rows = await harness.gateway.storage.usage.listByAccount(accountId, 10);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ model: 'beta-5.4', status: 'ok' });
    const prices = new ModelCatalog().resolve('beta-5.4').prices;
    expect(rows[0]!.costNano).toBe(
      BigInt(rows[0]!.inputTokens) * prices.input + BigInt(rows[0]!.outputTokens) * prices.output,
    );
    const balance = (await harness.gateway.storage.billing.balance(accountId))!;
    expect(balance.reservedNano).toBe(0n);
    expect(balance.balanceNano).toBe(parseUsd('10') - rows[0]!.costNano);
  });

  it('a fallback that could never answer stops the gateway at start-up, naming the setting', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'tollgate-fallback-'));
    try {
      writeFileSync(join(directory, 'tollgate.yaml'), 'models:\n  beta-5.4: { fallback: alpha-haiku-4-5 }\n');
      const env = {
        PORT: '0',
        HOST: '127.0.0.1',
        DATABASE_URL: `sqlite:${join(directory, 'tollgate.db')}`,
        OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      };
      // The process exits non-zero before it listens, and says why.
      await expect(spawnGateway({ ...env, TOLLGATE_CONFIG: join(directory, 'tollgate.yaml') })).rejects.toThrow(
        /exited \(1\) before listening:[\s\S]*models\.beta-5\.4\.fallbacks: 'alpha-haiku-4-5' cannot be used: .*not configured/,
      );
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('a request error is not a vendor outage: no fallback for it', async () => {
    const error = await openai.chat.completions
      .create({ model: 'beta-5.4', messages: [{ role: 'user', content: 'Hi [[sim error status=400]]' }] })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
  });
});
