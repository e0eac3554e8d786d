import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import { ModelCatalog } from '../../src/catalog/model-catalog.js';
import { type RunningSimulator, startSimulator } from '../../src/simulator/simulator-server.js';
import { FULL_PERMISSIONS } from '../../src/storage/key-permission-types.js';
import type { UsageRecord } from '../../src/storage/types.js';
import { AGENTS_PACKAGE_DIR, NODE_24 } from '../helpers/agents-package.js';
import { startTestGateway, type TestGateway, fundedAccountWithKey } from '../helpers/test-gateway.js';

/**
 * A request's own fallback list (`models`) on Anthropic Messages, Responses and Gemini's generateContent, sent by
 * the official SDKs as an extra body field, against the built gateway with the simulator as every vendor. Each
 * deployment has its own key, so `only-key=` faults hit one model alone. Also: the hold of a chain covers its
 * dearest model.
 */

const CATALOG = new ModelCatalog();
const PRIMARY_FAULT = '[[sim error status=503 only-key=sk-alpha-east]] [[sim prompt-cache=off]]';
const ATTEMPTS = 'alpha-sonnet-5=status_503,delta-v4-flash=ok';

function yamlFor(simulator: RunningSimulator): string {
  return `
deployments:
  alpha-east:
    family: alpha
    baseUrl: "${simulator.baseUrls.anthropic}"
    apiKey: sk-alpha-east
    retries: { maxAttempts: 1 }
  delta-main:
    family: delta
    baseUrl: "${simulator.baseUrls.deepseek}"
    apiKey: sk-delta-main
    retries: { maxAttempts: 1 }
models:
  alpha-sonnet-5: { deployments: [alpha-east] }
  alpha-opus-4-8: { deployments: [alpha-east] }
  delta-v4-flash: { deployments: [delta-main] }
`;
}

describe("a request's own fallback list on every client protocol", () => {
  let harness: TestGateway;
  let key: string;
  let accountId: string;
  let anthropic: Anthropic;
  let openai: OpenAI;

  beforeAll(async () => {
    harness = await startWithYaml();
    ({ key, accountId } = await fundedAccount('20'));
    anthropic = new Anthropic({ apiKey: key, baseURL: harness.gateway.url, maxRetries: 0 });
    openai = new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
  }, 60_000);

  afterAll(async () => {
    await harness?.close();
  });

  async function startWithYaml(): Promise<TestGateway> {
    const simulator = await startSimulator({ port: 0, host: '127.0.0.1' });
    const started = await startTestGateway({ yaml: yamlFor(simulator), env: { FREE_TOKENS_PER_DAY: '0' } });
    const close = started.close;
    return {
      ...started,
      async close() {
        await close();
        await simulator.close();
      },
    };
  }

  async function fundedAccount(usd: string, models: string[] | null = null) {
    const account = await fundedAccountWithKey(harness, usd);
    if (models === null) return account;
    const limited = await harness.gateway.keys.create(account.accountId, account.accountId, {
      name: 'limited',
      permissions: { ...FULL_PERMISSIONS, models },
    });
    return { ...account, key: limited.secret };
  }

  async function recordsOf(requestId: string, account = accountId): Promise<UsageRecord[]> {
    for (let tries = 0; tries < 100; tries++) {
      const found = await harness.gateway.storage.usage.findByRequestIds(account, [requestId]);
      if (found.length > 0) return found;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return [];
  }

  async function balance(account = accountId): Promise<bigint> {
    return (await harness.gateway.storage.billing.balance(account))!.balanceNano;
  }

  function costAt(modelId: string, record: UsageRecord): bigint {
    const prices = CATALOG.find(modelId)!.prices;
    return (
      BigInt(record.inputTokens - record.cacheReadTokens) * prices.input +
      BigInt(record.cacheReadTokens) * prices.cacheRead +
      BigInt(record.outputTokens) * prices.output
    );
  }

  /** The one usage record of the request: the fallback's, at the fallback's price, and the balance moved by it. */
  async function expectBilledToFallback(requestId: string): Promise<bigint> {
    const records = await recordsOf(requestId);
    expect(records).toHaveLength(1);
    const [record] = records as [UsageRecord];
    expect(record).toMatchObject({ model: 'delta-v4-flash', family: 'delta', status: 'ok' });
    expect(record.outputTokens).toBeGreaterThan(0);
    expect(record.costNano).toBe(costAt('delta-v4-flash', record));
    expect(record.rawUsage ?? '').toContain('tollgate_model_attempts');
    return record.costNano;
  }

  it.each([false, true])(
    'Anthropic Messages (stream %s): the first model fails, the second serves and bills',
    async (stream) => {
      const before = await balance();
      // A variable, not a literal: the SDK's types do not name the extension, and it sends the body as given.
      const body = {
        model: 'alpha-sonnet-5',
        max_tokens: 100,
        models: ['delta-v4-flash'],
        messages: [{ role: 'user' as const, content: `Messages chain ${stream} ${PRIMARY_FAULT}` }],
      };
      let model: string;
      let response: Response;
      if (stream) {
        const streamed = anthropic.messages.stream(body);
        model = (await streamed.finalMessage()).model;
        response = (await streamed.withResponse()).response;
      } else {
        const whole = await anthropic.messages.create(body).withResponse();
        model = whole.data.model;
        response = whole.response;
      }
      expect(model).toBe('delta-v4-flash');
      expect(response.headers.get('x-tollgate-model-attempts')).toBe(ATTEMPTS);
      const cost = await expectBilledToFallback(response.headers.get('x-request-id')!);
      expect(before - (await balance())).toBe(cost);
    },
  );

  it.each([false, true])(
    'Responses (stream %s): the first model fails, the second serves and bills',
    async (stream) => {
      const before = await balance();
      const body = {
        model: 'alpha-sonnet-5',
        models: ['delta-v4-flash'],
        max_output_tokens: 100,
        store: false,
        input: `Responses chain ${stream} ${PRIMARY_FAULT}`,
      };
      let model: string | undefined;
      let response: Response;
      if (stream) {
        const streamed = await openai.responses.create({ ...body, stream: true }).withResponse();
        for await (const event of streamed.data) if (event.type === 'response.completed') model = event.response.model;
        response = streamed.response;
      } else {
        const whole = await openai.responses.create(body).withResponse();
        model = whole.data.model;
        response = whole.response;
      }
      expect(model).toBe('delta-v4-flash');
      expect(response.headers.get('x-tollgate-model-attempts')).toBe(ATTEMPTS);
      const cost = await expectBilledToFallback(response.headers.get('x-request-id')!);
      expect(before - (await balance())).toBe(cost);
    },
  );

  it("Gemini generateContent (whole and streamed, @google/genai's extraBody): the second model serves and bills", async () => {
    interface Call {
      ok: boolean;
      value?: { text: string; modelVersion: string; headers: Record<string, string> };
      message?: string;
    }
    const before = await balance();
    const { stdout } = await promisify(execFile)(
      NODE_24,
      [join(AGENTS_PACKAGE_DIR, 'clients/google-genai-fallbacks.mjs')],
      {
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          GATEWAY_URL: harness.gateway.url,
          API_KEY: key,
          MODEL: 'alpha-sonnet-5',
          // Google's own spelling of a model name; the bare id works too.
          FALLBACKS: 'models/delta-v4-flash',
          PROMPT: `Gemini chain ${PRIMARY_FAULT}`,
        },
        cwd: AGENTS_PACKAGE_DIR,
        timeout: 60_000,
      },
    );
    const report = JSON.parse(stdout) as { whole: Call; stream: Call };
    let spent = 0n;
    for (const call of [report.whole, report.stream]) {
      expect(call.ok, call.message).toBe(true);
      expect(call.value!.text.length).toBeGreaterThan(0);
      expect(call.value!.modelVersion).toBe('delta-v4-flash');
      expect(call.value!.headers['x-tollgate-model-attempts']).toBe(ATTEMPTS);
      spent += await expectBilledToFallback(call.value!.headers['x-request-id']!);
    }
    expect(before - (await balance())).toBe(spent);
  });

  /** Raw requests, to read each protocol's own error shape. */
  function post(protocol: 'messages' | 'responses' | 'gemini', apiKey: string, models: string[], content: string) {
    const common = { 'content-type': 'application/json' };
    if (protocol === 'messages')
      return fetch(`${harness.gateway.url}/v1/messages`, {
        method: 'POST',
        headers: { ...common, 'x-api-key': apiKey, 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({
          model: 'alpha-sonnet-5',
          max_tokens: 50,
          models,
          messages: [{ role: 'user', content }],
        }),
      });
    if (protocol === 'responses')
      return fetch(`${harness.openaiBaseUrl}/responses`, {
        method: 'POST',
        headers: { ...common, authorization: `Bearer ${apiKey}` },
        body: JSON.stringify({ model: 'alpha-sonnet-5', models, input: content, store: false }),
      });
    return fetch(`${harness.gateway.url}/v1beta/models/alpha-sonnet-5:generateContent`, {
      method: 'POST',
      headers: { ...common, 'x-goog-api-key': apiKey },
      body: JSON.stringify({ models, contents: [{ role: 'user', parts: [{ text: content }] }] }),
    });
  }

  /** The error's message, from Anthropic's, OpenAI's or Google's error shape. */
  async function errorMessage(response: Response): Promise<string> {
    const body = (await response.json()) as { error: { message: string } };
    return body.error.message;
  }

  it.each(['messages', 'responses', 'gemini'] as const)(
    '%s: an unknown model in the list is a 400 naming it, and nothing is billed',
    async (protocol) => {
      const before = await balance();
      const refused = await post(protocol, key, ['delta-v4-flash', 'beta-9'], 'Unknown fallback');
      expect(refused.status).toBe(400);
      expect(await errorMessage(refused)).toContain("'beta-9'");
      expect(await balance()).toBe(before);
    },
  );

  it.each(['messages', 'responses', 'gemini'] as const)(
    "%s: the key's allowlist binds every model of the list",
    async (protocol) => {
      const limited = await fundedAccount('1', ['alpha-sonnet-5']);
      const refused = await post(protocol, limited.key, ['delta-v4-flash'], 'Not for this key');
      expect(refused.status).toBe(403);
      expect(await errorMessage(refused)).toContain("'delta-v4-flash'");
      expect(await balance(limited.accountId)).toBe(parseUsd('1'));
      expect(await harness.gateway.storage.usage.listByAccount(limited.accountId, 10)).toEqual([]);
    },
  );

  it('a list that repeats or leads back to its own model tries each model once', async () => {
    // Every model of the chain fails: the attempts show each once, and the client gets the last failure.
    const refused = await post(
      'messages',
      key,
      ['delta-v4-flash', 'alpha-sonnet-5', 'delta-v4-flash'],
      'Round and round [[sim error status=503]]',
    );
    // Anthropic's shape for a vendor outage: 529 overloaded_error.
    expect(refused.status).toBe(529);
    const [record] = await recordsOf(refused.headers.get('x-request-id')!);
    expect(record).toMatchObject({ status: 'upstream_error', costNano: 0n });
    expect(JSON.parse(record!.rawUsage!).tollgate_model_attempts).toEqual([
      { model: 'alpha-sonnet-5', outcome: 'status_503' },
      { model: 'delta-v4-flash', outcome: 'status_503' },
    ]);
  });

  describe('the hold of a chain covers its dearest model', () => {
    // About 4,000 prompt tokens: ~$0.0006 at delta-v4-flash's input price, ~$0.02 at alpha-opus-4-8's.
    const prompt = `${'ledger '.repeat(4_000)}`;
    const ask = (apiKey: string, content: string, models?: string[]) =>
      new Anthropic({ apiKey, baseURL: harness.gateway.url, maxRetries: 0 }).messages
        .create({
          model: 'delta-v4-flash',
          max_tokens: 200,
          ...(models === undefined ? {} : { models }),
          messages: [{ role: 'user', content: `${content} ${prompt} [[sim prompt-cache=off words=20]]` }],
        })
        .withResponse();

    it('refuses up front, in the API’s refusal, a balance that pays for the cheap model but not for a dearer fallback', async () => {
      const { key: poorKey, accountId: poor } = await fundedAccount('0.01');
      const refused = await ask(poorKey, 'Dear chain', ['alpha-opus-4-8']).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(Anthropic.APIError);
      expect((refused as InstanceType<typeof Anthropic.APIError>).status).toBe(403);
      expect((refused as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({
        type: 'error',
        error: { type: 'billing_error' },
      });
      expect(await balance(poor)).toBe(parseUsd('0.01'));
      // The same request without the dearer fallback fits the balance: only the chain's dearest model refused it.
      const { data, response } = await ask(poorKey, 'Cheap alone');
      expect(data.model).toBe('delta-v4-flash');
      const [record] = await recordsOf(response.headers.get('x-request-id')!, poor);
      expect(parseUsd('0.01') - (await balance(poor))).toBe(record!.costNano);
    });

    it('bills a dearer fallback exactly, at its own price, when the balance admits the chain', async () => {
      const { key: fundedKey, accountId: funded } = await fundedAccount('0.05');
      const { data, response } = await ask(
        fundedKey,
        'Dear fallback serves [[sim error status=503 only-key=sk-delta-main]]',
        ['alpha-opus-4-8'],
      );
      expect(data.model).toBe('alpha-opus-4-8');
      expect(response.headers.get('x-tollgate-model-attempts')).toBe('delta-v4-flash=status_503,alpha-opus-4-8=ok');
      const [record] = await recordsOf(response.headers.get('x-request-id')!, funded);
      expect(record).toMatchObject({ model: 'alpha-opus-4-8', status: 'ok', unbilledNano: 0n });
      expect(record!.costNano).toBe(costAt('alpha-opus-4-8', record!));
      expect(parseUsd('0.05') - (await balance(funded))).toBe(record!.costNano);
      expect(await balance(funded)).toBeGreaterThanOrEqual(0n);
    });
  });
});
