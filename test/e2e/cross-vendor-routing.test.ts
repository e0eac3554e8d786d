import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import { ModelCatalog } from '../../src/catalog/model-catalog.js';
import { startSimulator, type RunningSimulator } from '../../src/simulator/simulator-server.js';
import type { UsageRecord } from '../../src/storage/types.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

/**
 * Fallback chains across vendors and weighted deployments, through the built gateway with the simulator as every
 * vendor. Each deployment has its own key, so the simulator's `only-key=` faults hit one deployment alone; a
 * deployment at a port nobody listens on refuses connections.
 */

const CATALOG = new ModelCatalog();

function yamlFor(simulator: RunningSimulator): string {
  return `
deployments:
  alpha-east:
    family: alpha
    baseUrl: "${simulator.baseUrls.anthropic}"
    apiKey: sk-alpha-east
    retries: { maxAttempts: 1 }
    timeouts: { firstByteMs: 400, nonStreamMs: 400 }
  beta-gone:
    family: beta
    baseUrl: "http://127.0.0.1:9/v1"
    apiKey: sk-beta-gone
    retries: { maxAttempts: 1 }
  gamma-main: { family: gamma, baseUrl: "${simulator.baseUrls.gemini}", apiKey: sk-gamma-main }
  delta-big:
    family: delta
    baseUrl: "${simulator.baseUrls.deepseek}"
    apiKey: sk-delta-big
    weight: 3
    circuitBreaker: { failureThreshold: 1, cooldownMs: 2000 }
    retries: { maxAttempts: 2, baseDelayMs: 0, maxDelayMs: 0 }
  delta-small: { family: delta, baseUrl: "${simulator.baseUrls.deepseek}", apiKey: sk-delta-small, weight: 1 }
models:
  alpha-sonnet-5: { deployments: [alpha-east], fallbacks: [beta-5.4, gamma-2.5-pro] }
  beta-5.4: { deployments: [beta-gone] }
  gamma-2.5-pro: { deployments: [gamma-main] }
  delta-v4-flash: { deployments: [delta-big, delta-small] }
aliases:
  chained: { model: delta-r1, fallbacks: [gamma-2.5-pro] }
`;
}

describe('routing across vendors and deployments', () => {
  let simulator: RunningSimulator;
  let harness: TestGateway;
  let key: string;
  let accountId: string;
  let anthropic: Anthropic;
  let openai: OpenAI;

  beforeAll(async () => {
    simulator = await startSimulator({ port: 0, host: '127.0.0.1' });
    harness = await startTestGateway({ yaml: yamlFor(simulator), env: { FREE_TOKENS_PER_DAY: '0' } });
    const account = await harness.createAccountWithKey(undefined, 'enterprise');
    ({ key, accountId } = account);
    await harness.gateway.storage.billing.credit({
      accountId,
      kind: 'topup',
      amountNano: parseUsd('20'),
      idempotencyKey: `t-${accountId}`,
      note: null,
      at: Date.now(),
    });
    anthropic = new Anthropic({ apiKey: key, baseURL: harness.gateway.url, maxRetries: 0 });
    openai = new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
  });

  afterAll(async () => {
    await harness?.close();
    await simulator?.close();
  });

  async function recordsOf(requestId: string): Promise<UsageRecord[]> {
    for (let tries = 0; tries < 100; tries++) {
      const found = await harness.gateway.storage.usage.findByRequestIds(accountId, [requestId]);
      if (found.length > 0) return found;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return [];
  }

  async function balance(): Promise<bigint> {
    return (await harness.gateway.storage.billing.balance(accountId))!.balanceNano;
  }

  function costAt(modelId: string, record: UsageRecord): bigint {
    const prices = CATALOG.find(modelId)!.prices;
    return (
      BigInt(record.inputTokens - record.cacheReadTokens) * prices.input +
      BigInt(record.cacheReadTokens) * prices.cacheRead +
      BigInt(record.outputTokens) * prices.output
    );
  }

  it.each([
    ['503', '[[sim error status=503 only-key=sk-alpha-east]]', 'status_503', false],
    ['a timeout before the first byte', '[[sim slow-first-byte delay=3000 only-key=sk-alpha-east]]', 'timeout', true],
  ])(
    'alpha (%s) → beta (connection refused) → gamma: served and billed by gamma alone',
    async (_name, fault, reason, stream) => {
      const before = await balance();
      const content = `Chain check ${reason} ${fault} [[sim prompt-cache=off]]`;
      let model: string;
      let response: Response;
      if (stream) {
        const streamed = anthropic.messages.stream({
          model: 'alpha-sonnet-5',
          max_tokens: 200,
          messages: [{ role: 'user', content }],
        });
        const message = await streamed.finalMessage();
        model = message.model;
        response = (await streamed.withResponse()).response;
      } else {
        const whole = await anthropic.messages
          .create({ model: 'alpha-sonnet-5', max_tokens: 200, messages: [{ role: 'user', content }] })
          .withResponse();
        model = whole.data.model;
        response = whole.response;
      }
      expect(model).toBe('gamma-2.5-pro');
      expect(response.headers.get('x-tollgate-model')).toBe('gamma-2.5-pro');
      expect(response.headers.get('x-tollgate-model-attempts')).toBe(
        `alpha-sonnet-5=${reason},beta-5.4=connect,gamma-2.5-pro=ok`,
      );
      const records = await recordsOf(response.headers.get('x-request-id')!);
      expect(records).toHaveLength(1);
      const [record] = records as [UsageRecord];
      expect(record).toMatchObject({ model: 'gamma-2.5-pro', family: 'gamma', status: 'ok' });
      expect(record.outputTokens).toBeGreaterThan(0);
      expect(record.costNano).toBe(costAt('gamma-2.5-pro', record));
      expect(before - (await balance())).toBe(record.costNano);
    },
  );

  it('does not fall back once the first byte reached the client', async () => {
    const response = await fetch(`${harness.gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({
        model: 'alpha-sonnet-5',
        max_tokens: 200,
        stream: true,
        messages: [
          { role: 'user', content: 'Cut me off [[sim disconnect-mid-stream after=3 words=40 only-key=sk-alpha-east]]' },
        ],
      }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-tollgate-model')).toBe('alpha-sonnet-5');
    const text = await response.text();
    expect(text).toContain('event: error');
    const records = await recordsOf(response.headers.get('x-request-id')!);
    expect(records.map((record) => [record.model, record.status])).toEqual([['alpha-sonnet-5', 'upstream_error']]);
    expect(records[0]!.rawUsage ?? '').not.toContain('tollgate_model_attempts');
  });

  it("takes an alias's own chain, and bills the model that served", async () => {
    // delta-r1 is served by the deepseek vendor's own (keyless) credential: the fault hits it alone.
    const { data, response } = await openai.chat.completions
      .create({
        model: 'chained',
        messages: [{ role: 'user', content: 'Alias chain [[sim error status=502 only-key=tollgate-no-key]]' }],
      })
      .withResponse();
    expect(data.model).toBe('gamma-2.5-pro');
    expect(response.headers.get('x-tollgate-model-attempts')).toBe('delta-r1=status_5xx,gamma-2.5-pro=ok');
    const [record] = await recordsOf(response.headers.get('x-request-id')!);
    expect(record!.model).toBe('gamma-2.5-pro');
    expect(record!.costNano).toBe(costAt('gamma-2.5-pro', record!));
  });

  it("takes a request's own `models` chain on chat completions, and refuses an unknown one naming the field", async () => {
    const post = (body: object) =>
      fetch(`${harness.openaiBaseUrl}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify(body),
      });
    const content = 'Client chain [[sim error status=503 only-key=sk-alpha-east]]';
    const served = await post({
      model: 'alpha-sonnet-5',
      models: ['alpha-sonnet-5', 'delta-v4-flash'],
      messages: [{ role: 'user', content }],
    });
    expect(served.status).toBe(200);
    expect(((await served.json()) as { model: string }).model).toBe('delta-v4-flash');
    expect(served.headers.get('x-tollgate-model-attempts')).toBe('alpha-sonnet-5=status_503,delta-v4-flash=ok');
    const [record] = await recordsOf(served.headers.get('x-request-id')!);
    expect(record!.model).toBe('delta-v4-flash');

    const refused = await post({ model: 'alpha-sonnet-5', models: ['beta-9'], messages: [{ role: 'user', content }] });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { param: string; message: string } }).error).toMatchObject({
      param: 'models',
      message: expect.stringContaining("'beta-9'"),
    });
  });

  async function attemptsOn(credential: string, outcome: string): Promise<number> {
    const text = await (await fetch(`${harness.gateway.url}/metrics`)).text();
    const line = text
      .split('\n')
      .find(
        (row) =>
          row.startsWith('tollgate_upstream_attempts_total{') &&
          row.includes(`credential="${credential}"`) &&
          row.includes(`outcome="${outcome}"`),
      );
    return line === undefined ? 0 : Number(line.split(' ').at(-1));
  }

  async function deltaRequests(count: number, label: string, fault = ''): Promise<void> {
    for (let start = 0; start < count; start += 25) {
      await Promise.all(
        Array.from({ length: Math.min(25, count - start) }, (_, index) =>
          openai.chat.completions.create({
            model: 'delta-v4-flash',
            max_completion_tokens: 5,
            // Each its own conversation: affinity pins a conversation, the weights spread conversations.
            messages: [{ role: 'user', content: `${label} conversation ${start + index} ${fault} [[sim words=1]]` }],
          }),
        ),
      );
    }
  }

  it('spreads 1,000 requests over weighted deployments within 5% of their weights (3:1)', async () => {
    const big = await attemptsOn('delta-big/#1', 'ok');
    const small = await attemptsOn('delta-small/#1', 'ok');
    await deltaRequests(1_000, 'weights');
    const toBig = (await attemptsOn('delta-big/#1', 'ok')) - big;
    const toSmall = (await attemptsOn('delta-small/#1', 'ok')) - small;
    expect(toBig + toSmall).toBe(1_000);
    expect(Math.abs(toBig / 1_000 - 0.75)).toBeLessThan(0.05);
  });

  it('skips a failing deployment until its cool-down ends, then probes it again', async () => {
    // Until delta-big has failed once (threshold 1): the retry goes to delta-small, so each request still succeeds.
    for (let round = 0; (await attemptsOn('delta-big/#1', 'status_503')) === 0; round++) {
      expect(round).toBeLessThan(40);
      await deltaRequests(1, `cooling ${round}`, '[[sim error status=503 only-key=sk-delta-big]]');
    }
    const cooledAt = Date.now();
    const big = await attemptsOn('delta-big/#1', 'ok');
    const small = await attemptsOn('delta-small/#1', 'ok');
    await deltaRequests(40, 'while cooling');
    expect(Date.now() - cooledAt).toBeLessThan(2_000);
    expect(await attemptsOn('delta-big/#1', 'ok')).toBe(big);
    expect((await attemptsOn('delta-small/#1', 'ok')) - small).toBe(40);
    await new Promise((resolve) => setTimeout(resolve, 2_100 - (Date.now() - cooledAt)));
    await deltaRequests(60, 'after cooling');
    expect(await attemptsOn('delta-big/#1', 'ok')).toBeGreaterThan(big + 10);
  });
});
