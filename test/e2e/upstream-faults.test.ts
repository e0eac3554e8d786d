import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
  return client.chat.completions.create({ model: 'beta-5.4', messages: [{ role: 'user', content: `Hello ${directive}` }], ...extra });
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
    const error = (await ask('[[sim fault=rate-limit retry-after=7]]').catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect(error.headers?.get('retry-after')).toBe('7');
  });

  it("vendor 401 is the operator's problem: 502, and the client's key is not blamed", async () => {
    const error = (await ask('[[sim fault=error status=401]]').catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(error.status).toBe(502);
    expect(error.message).toMatch(/not a problem with your API key/);
  });

  it('vendor 400 → 400 invalid_request_error with the vendor message', async () => {
    const error = (await ask('[[sim fault=error status=400]]').catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
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
    const error = (await ask('[[sim fault=malformed-chunk]]').catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
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
    let row;
    for (let attempt = 0; attempt < 40 && row === undefined; attempt++) {
      row = await usageRow((status) => status === 'client_disconnected');
      if (row === undefined) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(row).toBeDefined();
    expect(row!.outputTokens).toBeGreaterThan(0);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
