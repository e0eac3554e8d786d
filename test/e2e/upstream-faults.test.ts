import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import { countTextTokens } from '../../src/canonical/count-tokens.js';
import { ModelCatalog } from '../../src/catalog/model-catalog.js';
import { resilienceYaml } from '../helpers/resilience-yaml.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

let harness: TestGateway;
let client: OpenAI;
let key: string;
let accountId: string;

beforeAll(async () => {
  harness = await startTestGateway();
  ({ key, accountId } = await harness.createAccountWithKey());
  client = new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
});

afterAll(async () => {
  await harness?.close();
});

function ask(directive: string, extra: Partial<OpenAI.ChatCompletionCreateParamsNonStreaming> = {}) {
  return client.chat.completions.create({
    model: 'beta-5.4',
    messages: [{ role: 'user', content: `Hello ${directive}` }],
    ...extra,
  });
}

async function usageRow(predicate: (status: string) => boolean) {
  const rows = await harness.gateway.storage.usage.listByAccount(accountId, 200);
  return rows.find((row) => predicate(row.status));
}

describe('vendor faults reach the client as well-formed errors', () => {
  it('vendor 500 → 500 server_error; recorded, nothing charged', async () => {
    const error = await ask('[[sim fault=error status=500]]').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.InternalServerError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(500);
    expect((error as InstanceType<typeof OpenAI.APIError>).type).toBe('server_error');
  });

  it('vendor 429 → 429 with retry-after passed on', async () => {
    const error = (await ask('[[sim fault=rate-limit retry-after=7]]').catch((e: unknown) => e)) as InstanceType<
      typeof OpenAI.APIError
    >;
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect(error.headers?.get('retry-after')).toBe('7');
  });

  it("vendor 401 is the operator's problem: 502, and the client's key is not blamed", async () => {
    const error = (await ask('[[sim fault=error status=401]]').catch((e: unknown) => e)) as InstanceType<
      typeof OpenAI.APIError
    >;
    expect(error.status).toBe(502);
    expect(error.message).toMatch(/not a problem with your API key/);
  });

  it('vendor 400 → 400 invalid_request_error with the vendor message', async () => {
    const error = (await ask('[[sim fault=error status=400]]').catch((e: unknown) => e)) as InstanceType<
      typeof OpenAI.APIError
    >;
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error.type).toBe('invalid_request_error');
  });

  it('unreachable vendor → 503', async () => {
    const dead = await startTestGateway({ env: { OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' } });
    try {
      const { key: deadKey } = await dead.createAccountWithKey();
      const deadClient = new OpenAI({ apiKey: deadKey, baseURL: dead.openaiBaseUrl, maxRetries: 0 });
      const error = (await deadClient.chat.completions
        .create({ model: 'beta-5.4', messages: [{ role: 'user', content: 'hi' }] })
        .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
      expect(error.status).toBe(503);
    } finally {
      await dead.close();
    }
  });

  it('a family without a configured vendor → 503 saying so', async () => {
    const openaiOnly = await startTestGateway({ vendors: ['openai'] });
    try {
      const { key: onlyKey } = await openaiOnly.createAccountWithKey();
      const onlyClient = new OpenAI({ apiKey: onlyKey, baseURL: openaiOnly.openaiBaseUrl, maxRetries: 0 });
      const error = (await onlyClient.chat.completions
        .create({ model: 'gamma-2.5-pro', messages: [{ role: 'user', content: 'hi' }] })
        .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
      expect(error.status).toBe(503);
      expect(error.message).toMatch(/GEMINI_API_KEY/);
    } finally {
      await openaiOnly.close();
    }
  });

  it('disconnect mid-stream → the SDK stream raises, and the partial reply is recorded', async () => {
    const stream = await client.chat.completions.create({
      model: 'beta-5.4',
      messages: [{ role: 'user', content: 'partial please [[sim fault=disconnect-mid-stream after=3 words=40]]' }],
      stream: true,
    });
    let text = '';
    const consume = async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    };
    await expect(consume()).rejects.toThrow(/ended the stream before the reply was complete|could not be reached/);
    expect(text.length).toBeGreaterThan(0);
    const row = await usageRow((status) => status === 'upstream_error');
    expect(row).toBeDefined();
  });

  it('a malformed vendor chunk → the stream ends with an error event, never a hang', async () => {
    const stream = await client.chat.completions.create({
      model: 'beta-5.4',
      messages: [{ role: 'user', content: 'garble [[sim fault=malformed-chunk after=2]]' }],
      stream: true,
    });
    const consume = async () => {
      for await (const _chunk of stream) void _chunk;
    };
    await expect(consume()).rejects.toThrow(/not valid JSON/);
  });

  it('a malformed non-stream vendor body → 502', async () => {
    const error = (await ask('[[sim fault=malformed-chunk]]').catch((e: unknown) => e)) as InstanceType<
      typeof OpenAI.APIError
    >;
    expect(error.status).toBe(502);
  });

  it('a client that disconnects mid-stream aborts the vendor call and is recorded as disconnected', async () => {
    const controller = new AbortController();
    const started = Date.now();
    const stream = await client.chat.completions.create(
      {
        model: 'beta-5.4',
        // 200 words at 50 ms a chunk would take many seconds if the gateway kept reading.
        messages: [{ role: 'user', content: 'slow story [[sim chunk-delay=50 words=200]]' }],
        stream: true,
      },
      { signal: controller.signal },
    );
    let chunks = 0;
    // The SDK ends iteration quietly on abort; what matters is that the connection is gone.
    for await (const _chunk of stream) {
      if (++chunks === 3) controller.abort();
    }
    expect(chunks).toBe(3);
    let row: Awaited<ReturnType<typeof usageRow>>;
    for (let attempt = 0; attempt < 40 && row === undefined; attempt++) {
      row = await usageRow((status) => status === 'client_disconnected');
      if (row === undefined) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(row).toBeDefined();
    expect(row!.outputTokens).toBeGreaterThan(0);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

/*
 * Every fault the simulator injects, through both client APIs (OpenAI SDK → an OpenAI-vendor model,
 * Anthropic SDK → an Anthropic-vendor model), stream and non-stream, with short timeouts and two attempts.
 * Each request runs on a fresh funded account, so its balance, ledger and holds show what that request did.
 */

/** Keep-alives (and the stream-start window) short enough to observe; see also the stream-start suite. */
const RESILIENCE_YAML = resilienceYaml(150);
const FUNDS = parseUsd('10');
const catalog = new ModelCatalog();

type Api = 'openai' | 'anthropic';
const MODEL_OF: Record<Api, string> = { openai: 'beta-5.4', anthropic: 'alpha-haiku-4-5' };

interface Outcome {
  /** Text the client received. */
  text: string;
  /** The HTTP status of a failed request, or undefined when it was answered (even if it broke mid-stream). */
  status: number | undefined;
  /** The error type the client saw (OpenAI `error.type`, Anthropic `error.type`). */
  errorType: string | undefined;
  message: string | undefined;
  retryAfter: string | null | undefined;
}

describe('upstream faults × client APIs × stream modes: outcome and billing', () => {
  let gateway: TestGateway;
  beforeAll(async () => {
    gateway = await startTestGateway({ yaml: RESILIENCE_YAML, env: { FREE_TOKENS_PER_DAY: '0' } });
  });
  afterAll(async () => {
    await gateway?.close();
  });

  async function funded(target: TestGateway = gateway) {
    const { key, accountId } = await target.createAccountWithKey(undefined, 'enterprise');
    await target.gateway.storage.billing.credit({
      accountId,
      kind: 'topup',
      amountNano: FUNDS,
      idempotencyKey: `t-${accountId}`,
      note: null,
      at: Date.now(),
    });
    return { key, accountId };
  }

  async function send(api: Api, stream: boolean, content: string, target: TestGateway = gateway) {
    const account = await funded(target);
    const outcome: Outcome = {
      text: '',
      status: undefined,
      errorType: undefined,
      message: undefined,
      retryAfter: undefined,
    };
    const model = MODEL_OF[api];
    try {
      if (api === 'openai') {
        const client = new OpenAI({ apiKey: account.key, baseURL: target.openaiBaseUrl, maxRetries: 0 });
        const messages = [{ role: 'user' as const, content }];
        if (stream) {
          for await (const chunk of await client.chat.completions.create({ model, messages, stream: true }))
            outcome.text += chunk.choices[0]?.delta.content ?? '';
        } else {
          outcome.text = (await client.chat.completions.create({ model, messages })).choices[0]!.message.content ?? '';
        }
      } else {
        const client = new Anthropic({ apiKey: account.key, baseURL: target.gateway.url, maxRetries: 0 });
        const params = { model, max_tokens: 400, messages: [{ role: 'user' as const, content }] };
        if (stream) {
          for await (const event of await client.messages.create({ ...params, stream: true })) {
            if (event.type === 'content_block_delta' && event.delta.type === 'text_delta')
              outcome.text += event.delta.text;
          }
        } else {
          const message = await client.messages.create(params);
          outcome.text = message.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
        }
      }
    } catch (error) {
      if (!(error instanceof OpenAI.APIError) && !(error instanceof Anthropic.APIError)) throw error;
      outcome.status = error.status;
      const body = error.error as
        | { type?: string; message?: string; error?: { type?: string; message?: string } }
        | undefined;
      outcome.errorType = api === 'openai' ? body?.type : body?.error?.type;
      outcome.message = api === 'openai' ? body?.message : body?.error?.message;
      outcome.retryAfter = error.headers?.get('retry-after');
    }
    return { ...account, outcome, model };
  }

  /** The request's usage row, and the account's money: settled once, nothing held, ledger = balance. */
  async function billing(target: TestGateway, accountId: string) {
    const rows = await target.gateway.storage.usage.listByAccount(accountId, 10);
    expect(rows).toHaveLength(1);
    const balance = (await target.gateway.storage.billing.balance(accountId))!;
    expect(balance.reservedNano).toBe(0n);
    const mismatches = await target.gateway.storage.billing.verifyLedger();
    expect(mismatches.filter((row) => row.accountId === accountId)).toEqual([]);
    expect(balance.balanceNano).toBe(FUNDS - rows[0]!.costNano);
    return rows[0]!;
  }

  async function expectNotCharged(target: TestGateway, accountId: string) {
    const row = await billing(target, accountId);
    expect(row.status).toBe('upstream_error');
    expect(row.costNano).toBe(0n);
  }

  /** Input plus exactly the delivered output, counted with the tokenizer (the vendor never sent its usage). */
  async function expectChargedForDelivered(target: TestGateway, accountId: string, model: string, delivered: string) {
    const row = await billing(target, accountId);
    expect(row.status).toBe('upstream_error');
    expect(delivered.length).toBeGreaterThan(0);
    expect(row.outputTokens).toBe(countTextTokens(delivered));
    expect(row.inputTokens).toBeGreaterThan(0);
    const prices = catalog.resolve(model).prices;
    expect(row.costNano).toBe(BigInt(row.inputTokens) * prices.input + BigInt(row.outputTokens) * prices.output);
  }

  async function expectChargedInFull(target: TestGateway, accountId: string) {
    const row = await billing(target, accountId);
    expect(row.status).toBe('ok');
    expect(row.costNano).toBeGreaterThan(0n);
  }

  const CASES = [
    { api: 'openai', stream: false },
    { api: 'openai', stream: true },
    { api: 'anthropic', stream: false },
    { api: 'anthropic', stream: true },
  ] as const;

  /** The status each API uses for an unavailable upstream: Anthropic clients know overload as 529. */
  const UNAVAILABLE: Record<Api, number> = { openai: 503, anthropic: 529 };

  describe.each(CASES)('$api client, stream=$stream', ({ api, stream }) => {
    it('refused connection → retried, then 503 (529 for Anthropic clients); nothing charged', async () => {
      const refused = await startTestGateway({
        yaml: RESILIENCE_YAML,
        env: {
          FREE_TOKENS_PER_DAY: '0',
          OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
          ANTHROPIC_BASE_URL: 'http://127.0.0.1:9',
        },
      });
      try {
        const { outcome, accountId } = await send(api, stream, 'Hello', refused);
        expect(outcome.status).toBe(UNAVAILABLE[api]);
        expect(outcome.message).toMatch(/could not be reached/);
        await expectNotCharged(refused, accountId);
      } finally {
        await refused.close();
      }
    });

    it('slow first byte beyond firstByteMs on every attempt → 504 timeout; nothing charged', async () => {
      const { outcome, accountId } = await send(api, stream, 'Hello [[sim slow-first-byte delay=1500]]');
      expect(outcome.status).toBe(504);
      expect(outcome.errorType).toBe(api === 'openai' ? 'server_error' : 'timeout_error');
      await expectNotCharged(gateway, accountId);
    });

    it('slow first byte once → the retry answers; charged once, for one reply', async () => {
      const { outcome, accountId } = await send(
        api,
        stream,
        `Hello [[sim slow-first-byte delay=1500 times=1]] ${api}${stream}`,
      );
      expect(outcome.status).toBeUndefined();
      expect(outcome.text.length).toBeGreaterThan(0);
      await expectChargedInFull(gateway, accountId);
    });

    it('429 with a short retry-after → waited out and retried; the client gets the reply', async () => {
      const { outcome, accountId } = await send(
        api,
        stream,
        `Hello [[sim rate-limit retry-after=1 times=1]] ${api}${stream}`,
      );
      expect(outcome.status).toBeUndefined();
      expect(outcome.text.length).toBeGreaterThan(0);
      await expectChargedInFull(gateway, accountId);
    });

    it('429 with a retry-after longer than the gateway waits → 429 with retry-after; nothing charged', async () => {
      const { outcome, accountId } = await send(api, stream, 'Hello [[sim rate-limit retry-after=30]]');
      expect(outcome.status).toBe(429);
      expect(outcome.errorType).toBe('rate_limit_error');
      expect(outcome.retryAfter).toBe('30');
      await expectNotCharged(gateway, accountId);
    });

    it('500 on every attempt → 500; nothing charged', async () => {
      const { outcome, accountId } = await send(api, stream, 'Hello [[sim error status=500]]');
      expect(outcome.status).toBe(500);
      expect(outcome.errorType).toBe(api === 'openai' ? 'server_error' : 'api_error');
      await expectNotCharged(gateway, accountId);
    });

    it('500 once → retried; the client gets the reply, charged once', async () => {
      const { outcome, accountId } = await send(api, stream, `Hello [[sim error status=500 times=1]] ${api}${stream}`);
      expect(outcome.status).toBeUndefined();
      expect(outcome.text.length).toBeGreaterThan(0);
      await expectChargedInFull(gateway, accountId);
    });

    if (stream) {
      it('disconnect mid-stream → the stream ends with an error event; input + delivered output charged', async () => {
        const { outcome, accountId, model } = await send(
          api,
          stream,
          'Tell me more [[sim disconnect-mid-stream after=3 words=40]]',
        );
        expect(outcome.errorType).toBe(api === 'openai' ? 'server_error' : 'api_error');
        expect(outcome.message).toMatch(/ended the stream before the reply was complete/);
        await expectChargedForDelivered(gateway, accountId, model, outcome.text);
      });

      it('stall mid-stream beyond idleMs → the stream ends with a timeout error event; delivered output charged', async () => {
        const { outcome, accountId, model } = await send(
          api,
          stream,
          'Tell me more [[sim stall-mid-stream delay=forever after=3 words=40]]',
        );
        expect(outcome.errorType).toBe(api === 'openai' ? 'server_error' : 'timeout_error');
        expect(outcome.message).toMatch(/stopped sending before the reply was complete/);
        await expectChargedForDelivered(gateway, accountId, model, outcome.text);
      });

      it('malformed chunk → the stream ends with an error event; delivered output charged', async () => {
        const { outcome, accountId, model } = await send(
          api,
          stream,
          'Tell me more [[sim malformed-chunk after=3 words=40]]',
        );
        expect(outcome.errorType).toBe(api === 'openai' ? 'server_error' : 'api_error');
        expect(outcome.message).toMatch(/not valid JSON|could not be read|malformed/i);
        await expectChargedForDelivered(gateway, accountId, model, outcome.text);
      });
    } else {
      it('disconnect before the reply → retried, then 503 (529); nothing charged', async () => {
        const { outcome, accountId } = await send(api, stream, 'Hello [[sim disconnect-mid-stream]]');
        expect(outcome.status).toBe(UNAVAILABLE[api]);
        await expectNotCharged(gateway, accountId);
      });

      it('a body that stalls beyond idleMs → retried, then 504; nothing charged', async () => {
        const { outcome, accountId } = await send(api, stream, 'Hello [[sim stall-mid-stream delay=forever]]');
        expect(outcome.status).toBe(504);
        await expectNotCharged(gateway, accountId);
      });

      it('a malformed body once → retried; the client gets the reply, charged once', async () => {
        const { outcome, accountId } = await send(api, stream, `Hello [[sim malformed-chunk times=1]] ${api}`);
        expect(outcome.status).toBeUndefined();
        expect(outcome.text.length).toBeGreaterThan(0);
        await expectChargedInFull(gateway, accountId);
      });

      it('a malformed body on every attempt → 502; nothing charged', async () => {
        const { outcome, accountId } = await send(api, stream, 'Hello [[sim malformed-chunk]]');
        expect(outcome.status).toBe(502);
        await expectNotCharged(gateway, accountId);
      });
    }
  });

  describe.each(['gamma-3.5-flash', 'delta-v4-flash'])('the other vendors (%s), through the OpenAI client', (model) => {
    async function ask(content: string, stream: boolean) {
      const account = await funded();
      const client = new OpenAI({ apiKey: account.key, baseURL: gateway.openaiBaseUrl, maxRetries: 0 });
      let text = '';
      const error = await (async () => {
        if (!stream) {
          text =
            (await client.chat.completions.create({ model, messages: [{ role: 'user', content }] })).choices[0]!.message
              .content ?? '';
          return undefined;
        }
        for await (const chunk of await client.chat.completions.create({
          model,
          stream: true,
          messages: [{ role: 'user', content }],
        })) {
          text += chunk.choices[0]?.delta.content ?? '';
        }
        return undefined;
      })().catch((caught: unknown) => caught as InstanceType<typeof OpenAI.APIError>);
      return { ...account, text, error };
    }

    it('503 once → retried; the reply arrives and is charged once', async () => {
      const { text, error, accountId } = await ask(`Hello [[sim error status=503 times=1]] ${model}`, false);
      expect(error).toBeUndefined();
      expect(text.length).toBeGreaterThan(0);
      await expectChargedInFull(gateway, accountId);
    });

    it('stall mid-stream → a timeout error event; input + delivered output charged', async () => {
      const { text, error, accountId } = await ask(
        'More please [[sim stall-mid-stream delay=forever after=2 words=30]]',
        true,
      );
      expect(error).toBeInstanceOf(OpenAI.APIError);
      expect(error?.message).toMatch(/stopped sending before the reply was complete/);
      await expectChargedForDelivered(gateway, accountId, model, text);
    });
  });

  describe('a vendor error right after the stream started (before any output)', () => {
    // A long start window, so the first event always arrives inside it, however loaded the machine.
    let patient: TestGateway;
    beforeAll(async () => {
      patient = await startTestGateway({ yaml: resilienceYaml(5_000), env: { FREE_TOKENS_PER_DAY: '0' } });
    });
    afterAll(async () => {
      await patient?.close();
    });

    it.each(['openai', 'anthropic'] as const)('%s client: once → retried, the client gets the reply', async (api) => {
      const { outcome, accountId } = await send(
        api,
        true,
        `Hi [[sim error status=529 after=0 times=1]] ${api}`,
        patient,
      );
      expect(outcome.status).toBeUndefined();
      expect(outcome.text.length).toBeGreaterThan(0);
      await expectChargedInFull(patient, accountId);
    });

    it.each(['openai', 'anthropic'] as const)(
      '%s client: every attempt → a real HTTP status, not a 200 with an error; nothing charged',
      async (api) => {
        const { outcome, accountId } = await send(api, true, 'Hi [[sim error status=529 after=0]]', patient);
        // The OpenAI-format vendor reports it as a 500-class stream error, Anthropic as overloaded.
        expect(outcome.status).toBe(api === 'openai' ? 500 : 529);
        await expectNotCharged(patient, accountId);
      },
    );
  });

  describe('keep-alive while the upstream is silent', () => {
    async function rawStream(path: string, headers: Record<string, string>, body: object): Promise<string> {
      const { key } = await funded();
      const response = await fetch(`${gateway.gateway.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
      expect(response.status).toBe(200);
      return response.text();
    }

    it('OpenAI stream: keep-alive comments go out during a slow first token, then the reply completes', async () => {
      const text = await rawStream(
        '/v1/chat/completions',
        {},
        { model: 'beta-5.4', stream: true, messages: [{ role: 'user', content: 'Hi [[sim ttft=800]]' }] },
      );
      const firstData = text.indexOf('data: {');
      expect(text.slice(0, firstData)).toContain(': keep-alive\n\n');
      expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    });

    it('Anthropic stream: keep-alive comments during a stall shorter than idleMs; the reply completes', async () => {
      const text = await rawStream(
        '/v1/messages',
        { 'anthropic-version': '2023-06-01' },
        {
          model: 'alpha-haiku-4-5',
          max_tokens: 200,
          stream: true,
          messages: [{ role: 'user', content: 'Hi [[sim stall-mid-stream delay=700 after=2]]' }],
        },
      );
      const firstDelta = text.indexOf('event: content_block_delta');
      expect(text.slice(firstDelta)).toContain(': keep-alive\n\n');
      expect(text).toContain('event: message_stop');
      expect(text).not.toContain('event: error');
    });
  });
});
