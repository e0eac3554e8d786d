/**
 * The Google routes over real HTTP, without an SDK in between: the wire details the SDK tests cannot see (the JSON
 * array stream without `alt=sse`, the end of an SSE stream, a mid-stream failure, snake_case fields, the key in
 * the query string never logged), and the bad input, each answered in Google's error shape with nothing
 * billed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawExchange } from '../helpers/raw-http.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const METRICS_TOKEN = 'metrics-token-for-the-gemini-test-0123';
let harness: TestGateway;
let key: string;
let accountId: string;

beforeAll(async () => {
  harness = await startTestGateway({
    env: { METRICS_TOKEN, STREAM_KEEPALIVE_MS: '100' },
    yaml: 'tiers:\n  tiny:\n    requestsPerMinute: 1\n',
  });
  ({ key, accountId } = await harness.createAccountWithKey('gemini-wire@example.com', 'pro'));
}, 60_000);

afterAll(async () => {
  await harness?.close();
});

interface Reply {
  status: number;
  headers: Headers;
  text: string;
}

async function call(
  path: string,
  body: unknown,
  headers: Record<string, string> = { 'x-goog-api-key': key },
  method = 'POST',
): Promise<Reply> {
  const response = await fetch(`${harness.gateway.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

const hello = { contents: [{ role: 'user', parts: [{ text: 'Tell me about tolls.' }] }] };

function expectGoogleError(
  reply: Reply,
  code: number,
  status: string,
): { message: string; details: Array<Record<string, unknown>> } {
  expect(reply.status, reply.text).toBe(code);
  const body = JSON.parse(reply.text) as {
    error: { code: number; message: string; status: string; details: Array<Record<string, unknown>> };
  };
  expect(Object.keys(body)).toEqual(['error']);
  expect(body.error).toMatchObject({ code, status });
  expect(typeof body.error.message).toBe('string');
  return body.error;
}

async function usageCount(): Promise<number> {
  return (await harness.gateway.storage.usage.listByAccount(accountId, 1000)).length;
}

describe('Google routes on the wire', () => {
  it('streamGenerateContent without alt=sse is Google JSON array, the last element with finishReason and usage', async () => {
    const reply = await call('/v1beta/models/beta-5.4:streamGenerateContent', hello);
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toContain('application/json');
    const chunks = JSON.parse(reply.text) as Array<{
      candidates: Array<{ content: { parts: Array<{ text?: string }> }; finishReason?: string }>;
      usageMetadata?: { promptTokenCount: number };
    }>;
    expect(chunks.length).toBeGreaterThan(1);
    expect(
      chunks
        .slice(0, -1)
        .every((chunk) => chunk.candidates[0]!.finishReason === undefined && chunk.usageMetadata === undefined),
    ).toBe(true);
    expect(chunks.at(-1)!.candidates[0]!.finishReason).toBe('STOP');
    expect(chunks.at(-1)!.usageMetadata!.promptTokenCount).toBeGreaterThan(0);
    expect(chunks.every((chunk) => chunk.candidates[0]!.content.parts.length > 0)).toBe(true);
  });

  it('an SSE stream ends with its last data chunk: no [DONE], which @google/genai would parse as JSON', async () => {
    const reply = await call('/v1beta/models/alpha-haiku-4-5:streamGenerateContent?alt=sse', hello);
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toContain('text/event-stream');
    const events = reply.text.split('\n\n').filter((event) => event.startsWith('data: '));
    expect(reply.text).not.toContain('[DONE]');
    const last = JSON.parse(events.at(-1)!.slice('data: '.length)) as {
      candidates: Array<{ finishReason: string }>;
      usageMetadata: { cost_nano_usd?: string };
    };
    expect(last.candidates[0]!.finishReason).toBe('STOP');
    expect(last.usageMetadata.cost_nano_usd).toMatch(/^\d+$/);
  });

  it('keep-alives while the vendor is silent are blank lines, never SSE comments (Gemini CLI stalls on those)', async () => {
    const paused = { contents: [{ role: 'user', parts: [{ text: 'Hi [[sim stall-mid-stream delay=800 after=2]]' }] }] };
    const sse = await call('/v1beta/models/beta-5.4:streamGenerateContent?alt=sse', paused);
    expect(sse.text).toMatch(/\n\n\n+data: /);
    expect(sse.text.split('\n').filter((line) => line !== '' && !line.startsWith('data: '))).toEqual([]);
    const array = await call('/v1beta/models/beta-5.4:streamGenerateContent', paused);
    expect((JSON.parse(array.text) as unknown[]).length).toBeGreaterThan(2);
  });

  it('a vendor failing mid-stream: one more chunk {"error": {code, message, status}}, as Google sends it', async () => {
    const failing = {
      contents: [{ role: 'user', parts: [{ text: 'Tell me about tolls. [[sim fault=error status=500 after=2]]' }] }],
    };
    const sse = await call('/v1beta/models/gamma-3.5-flash:streamGenerateContent?alt=sse', failing);
    expect(sse.status).toBe(200);
    const events = sse.text.split('\n\n').filter((event) => event.startsWith('data: '));
    const last = JSON.parse(events.at(-1)!.slice('data: '.length)) as { error: { code: number; status: string } };
    expect(last.error).toMatchObject({ status: 'INTERNAL' });
    expect(last.error.code).toBeGreaterThanOrEqual(500);
    const array = await call('/v1beta/models/gamma-3.5-flash:streamGenerateContent', failing);
    const chunks = JSON.parse(array.text) as Array<{ error?: { status: string } }>;
    expect(chunks.at(-1)!.error?.status).toBe('INTERNAL');
  });

  it('accepts snake_case fields (curl and the Python SDK send them) and ?key= for the key', async () => {
    const reply = await call(
      `/v1beta/models/models%2Fdelta-v4-flash:generateContent?key=${encodeURIComponent(key)}`,
      {
        contents: [{ role: 'user', parts: [{ text: 'Hi' }] }],
        system_instruction: { parts: [{ text: 'Be brief.' }] },
        generation_config: { max_output_tokens: 50, stop_sequences: [] },
      },
      {},
    );
    expect(reply.status, reply.text).toBe(200);
    expect(JSON.parse(reply.text)).toMatchObject({
      candidates: [{ finishReason: expect.any(String) }],
      modelVersion: 'delta-v4-flash',
    });
  });

  it('a key in the query string never reaches a log line (the request log writes the path only)', async () => {
    const from = harness.logs.length;
    const good = await call(`/v1beta/models/gamma-2.5-pro:countTokens?key=${encodeURIComponent(key)}`, hello, {});
    expect(good.status).toBe(200);
    const bad = await call(
      '/v1beta/models/gamma-2.5-pro:generateContent?key=sk-tg-not-a-real-key-0123456789',
      hello,
      {},
    );
    expectGoogleError(bad, 401, 'UNAUTHENTICATED');
    await harness.flushLogs();
    const lines = harness.logs.slice(from).join('');
    expect(lines).toContain('"url":"/v1beta/models/gamma-2.5-pro:countTokens"');
    expect(lines).not.toContain(key);
    expect(lines).not.toContain('sk-tg-not-a-real-key');
    expect(lines).not.toContain('key=');
  });

  it('nor does a request the HTTP parser refuses (its raw bytes are not logged)', async () => {
    const from = harness.logs.length;
    await rawExchange(
      harness.gateway.url,
      30_000,
      `GET /v1beta/models?key=${key} HTTP/1.1\r\nHost: x\r\nBad Header: \x01\r\n\r\n`,
    );
    await harness.flushLogs();
    expect(harness.logs.slice(from).join('')).toContain('client error');
    expect(harness.logs.slice(from).join('')).not.toContain(key);
  });

  it('/v1/models/{model}:generateContent (the SDK with apiVersion v1) is the same route; /metrics labels both by route and model', async () => {
    expect((await call('/v1/models/gamma-2.5-pro:generateContent', hello)).status).toBe(200);
    expect((await call('/v1beta/models/gamma-2.5-pro:generateContent', hello)).status).toBe(200);
    const metrics = await (
      await fetch(`${harness.gateway.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
    ).text();
    expect(metrics).toMatch(
      /^tollgate_http_requests_total\{route="\/v1\/models\/:model:generateContent",model="gamma-2.5-pro",status="200"\} 1$/m,
    );
    expect(metrics).toMatch(
      /^tollgate_http_requests_total\{route="\/v1beta\/models\/:model:generateContent",model="gamma-2.5-pro",status="200"\} \d+$/m,
    );
  });

  it('GET /v1beta/models pages with pageSize and pageToken', async () => {
    const first = JSON.parse(
      (await call('/v1beta/models?pageSize=4', undefined, { 'x-goog-api-key': key }, 'GET')).text,
    ) as { models: Array<{ name: string }>; nextPageToken?: string };
    expect(first.models).toHaveLength(4);
    const names = first.models.map((model) => model.name);
    let token = first.nextPageToken;
    while (token !== undefined) {
      const page = JSON.parse(
        (await call(`/v1beta/models?pageSize=4&pageToken=${token}`, undefined, { 'x-goog-api-key': key }, 'GET')).text,
      ) as { models: Array<{ name: string }>; nextPageToken?: string };
      names.push(...page.models.map((model) => model.name));
      token = page.nextPageToken;
    }
    expect(names).toHaveLength(11);
    expect(new Set(names).size).toBe(11);
  });
});

describe('a tool loop that changes family half-way, thinking on', () => {
  const tools = [
    {
      functionDeclarations: [
        { name: 'lookup', parametersJsonSchema: { type: 'object', properties: { word: { type: 'string' } } } },
      ],
    },
  ];
  const generationConfig = { thinkingConfig: { includeThoughts: true, thinkingBudget: 2048 } };
  const user = { role: 'user', parts: [{ text: 'What is a turnpike? [[sim tool=lookup]]' }] };

  it.each([
    ['gamma-3.5-flash', 'alpha-sonnet-5'],
    ['alpha-sonnet-5', 'gamma-3.5-flash'],
    ['delta-r1', 'alpha-opus-4-8'],
    ['alpha-haiku-4-5', 'o3'],
    ['o4-mini', 'gamma-2.5-pro'],
  ])(
    '%s calls the function, %s answers from its response: each vendor gets back only the reasoning it signed',
    async (first, second) => {
      const asked = await call(`/v1beta/models/${first}:generateContent`, {
        contents: [user],
        tools,
        generationConfig,
      });
      expect(asked.status, asked.text).toBe(200);
      const content = (
        JSON.parse(asked.text) as {
          candidates: Array<{
            content: { role: string; parts: Array<{ functionCall?: { id: string; name: string } }> };
          }>;
        }
      ).candidates[0]!.content;
      const functionCall = content.parts.find((part) => part.functionCall !== undefined)!.functionCall!;
      const answered = await call(`/v1beta/models/${second}:generateContent`, {
        contents: [
          user,
          content,
          {
            role: 'user',
            parts: [
              {
                functionResponse: { id: functionCall.id, name: functionCall.name, response: { output: 'a toll road' } },
              },
            ],
          },
        ],
        tools,
        generationConfig,
      });
      expect(answered.status, answered.text).toBe(200);
      expect(answered.text).toContain('a toll road');
    },
  );
});

describe('billing and limits', () => {
  it('each reply is billed once with the counts its usageMetadata shows, the stream and the whole reply alike', async () => {
    for (const path of [
      '/v1beta/models/alpha-opus-4-8:generateContent',
      '/v1beta/models/o3:streamGenerateContent?alt=sse',
    ]) {
      const reply = await call(path, hello);
      expect(reply.status).toBe(200);
      const id = reply.headers.get('x-request-id')!;
      const events = path.includes('alt=sse')
        ? reply.text
            .split('\n\n')
            .filter((event) => event.startsWith('data: '))
            .map((event) => event.slice(6))
        : [reply.text];
      const shown = (
        JSON.parse(events.at(-1)!) as {
          usageMetadata: {
            promptTokenCount: number;
            candidatesTokenCount: number;
            thoughtsTokenCount?: number;
            cost_nano_usd: string;
          };
        }
      ).usageMetadata;
      const records = (await harness.gateway.storage.usage.listByAccount(accountId, 1000)).filter(
        (record) => record.requestId === id,
      );
      expect(records).toHaveLength(1);
      const record = records[0]!;
      expect(record.inputTokens + record.cacheReadTokens + record.cacheWriteTokens).toBe(shown.promptTokenCount);
      expect(record.outputTokens).toBe(shown.candidatesTokenCount + (shown.thoughtsTokenCount ?? 0));
      expect(record.costNano).toBe(BigInt(shown.cost_nano_usd));
      expect(record.status).toBe('ok');
    }
  });

  it('over the rate limit: 429 RESOURCE_EXHAUSTED with RetryInfo and retry-after', async () => {
    const { key: tinyKey } = await harness.createAccountWithKey('gemini-tiny@example.com', 'tiny');
    expect(
      (await call('/v1beta/models/delta-v4-flash:generateContent', hello, { 'x-goog-api-key': tinyKey })).status,
    ).toBe(200);
    const refused = await call('/v1beta/models/delta-v4-flash:generateContent', hello, { 'x-goog-api-key': tinyKey });
    const error = expectGoogleError(refused, 429, 'RESOURCE_EXHAUSTED');
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(error.details).toContainEqual({
      '@type': 'type.googleapis.com/google.rpc.RetryInfo',
      retryDelay: `${retryAfter}s`,
    });
  });
});

describe('bad input: Google-shaped errors, nothing billed', () => {
  it('a model path that names no model → 404 NOT_FOUND', async () => {
    const before = await usageCount();
    expectGoogleError(await call('/v1beta/models/gemini-9-ultra:generateContent', hello), 404, 'NOT_FOUND');
    expectGoogleError(
      await call('/v1beta/models/gemini-9-ultra:streamGenerateContent?alt=sse', hello),
      404,
      'NOT_FOUND',
    );
    expectGoogleError(
      await call('/v1beta/models/gemini-9-ultra', undefined, { 'x-goog-api-key': key }, 'GET'),
      404,
      'NOT_FOUND',
    );
    expect(await usageCount()).toBe(before);
  });

  it('a functionResponse that answers no functionCall → 400 INVALID_ARGUMENT naming the part', async () => {
    const before = await usageCount();
    const body = {
      contents: [
        { role: 'user', parts: [{ text: 'What is a turnpike?' }] },
        { role: 'user', parts: [{ functionResponse: { name: 'lookup', response: { output: 'a road' } } }] },
      ],
    };
    const error = expectGoogleError(
      await call('/v1beta/models/alpha-sonnet-5:generateContent', body),
      400,
      'INVALID_ARGUMENT',
    );
    expect(error.message).toContain('contents[1].parts[0].functionResponse');
    expect(await usageCount()).toBe(before);
  });

  it('a functionCall left unanswered by the next user content → 400', async () => {
    const body = {
      contents: [
        { role: 'user', parts: [{ text: 'Look two words up.' }] },
        {
          role: 'model',
          parts: [
            { functionCall: { name: 'lookup', args: { word: 'a' } } },
            { functionCall: { name: 'lookup', args: { word: 'b' } } },
          ],
        },
        { role: 'user', parts: [{ functionResponse: { name: 'lookup', response: { output: 'A' } } }] },
      ],
      tools: [
        {
          functionDeclarations: [
            { name: 'lookup', parameters: { type: 'OBJECT', properties: { word: { type: 'STRING' } } } },
          ],
        },
      ],
    };
    expectGoogleError(await call('/v1beta/models/beta-5.4:generateContent', body), 400, 'INVALID_ARGUMENT');
  });

  it('an empty parts list, a part with two data fields, no contents → 400 naming the field', async () => {
    const before = await usageCount();
    const empty = expectGoogleError(
      await call('/v1beta/models/gamma-2.5-pro:generateContent', { contents: [{ role: 'user', parts: [] }] }),
      400,
      'INVALID_ARGUMENT',
    );
    expect(empty.message).toContain('contents[0].parts');
    const two = expectGoogleError(
      await call('/v1beta/models/gamma-2.5-pro:generateContent', {
        contents: [{ role: 'user', parts: [{ text: 'a', inlineData: { mimeType: 'image/png', data: 'AAAA' } }] }],
      }),
      400,
      'INVALID_ARGUMENT',
    );
    expect(two.message).toContain('exactly one data field');
    expectGoogleError(await call('/v1beta/models/gamma-2.5-pro:countTokens', {}), 400, 'INVALID_ARGUMENT');
    expect(await usageCount()).toBe(before);
  });

  it('contract-changing fields are refused, not dropped: candidateCount > 1 where one, built-in tools, Files API URIs', async () => {
    const count = expectGoogleError(
      await call('/v1beta/models/alpha-haiku-4-5:generateContent', {
        ...hello,
        generationConfig: { candidateCount: 2 },
      }),
      400,
      'INVALID_ARGUMENT',
    );
    expect(count.message).toContain('candidateCount');
    // Google Search is a web search alpha and gamma run (server-tools-translation.test.ts); code execution none.
    const code = expectGoogleError(
      await call('/v1beta/models/gamma-2.5-pro:generateContent', { ...hello, tools: [{ codeExecution: {} }] }),
      400,
      'INVALID_ARGUMENT',
    );
    expect(code.message).toContain('tools[0].codeExecution');
    const file = expectGoogleError(
      await call('/v1beta/models/alpha-sonnet-5:generateContent', {
        contents: [
          {
            role: 'user',
            parts: [
              {
                fileData: {
                  mimeType: 'application/pdf',
                  fileUri: 'https://generativelanguage.googleapis.com/v1beta/files/abc',
                },
              },
            ],
          },
        ],
      }),
      400,
      'INVALID_ARGUMENT',
    );
    expect(file.message).toContain('not reachable through this gateway');
  });

  it('a dropped parameter is named as a Google client spells it (generationConfig.topK, not top_k)', async () => {
    const reply = await call('/v1beta/models/beta-5.4:generateContent', { ...hello, generationConfig: { topK: 5 } });
    expect(reply.status).toBe(200);
    expect(reply.headers.get('x-tollgate-dropped-params')?.split(',')).toEqual(['generationConfig.topK']);
  });

  it('safetySettings are dropped and reported for a non-Google vendor, and reach a Gemini model as sent', async () => {
    const safetySettings = [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_NONE' }];
    const reply = await call('/v1beta/models/alpha-haiku-4-5:generateContent', { ...hello, safetySettings });
    expect(reply.status).toBe(200);
    expect(reply.headers.get('x-tollgate-dropped-params')).toContain('safetySettings');
    const gemini = await call('/v1beta/models/gamma-3.5-flash:generateContent', {
      ...hello,
      safetySettings,
      generationConfig: { mediaResolution: 'MEDIA_RESOLUTION_LOW' },
    });
    expect(gemini.status, gemini.text).toBe(200);
    expect(gemini.headers.get('x-tollgate-dropped-params')).toBeNull();
    // Gemini refuses a top-level field it does not know (the simulator too): a misspelt one is left out and named.
    const misspelt = await call('/v1beta/models/gamma-3.5-flash:generateContent', {
      ...hello,
      safetySetting: safetySettings,
    });
    expect(misspelt.status, misspelt.text).toBe(200);
    expect(misspelt.headers.get('x-tollgate-dropped-params')).toBe('safetySetting');
  });

  it('a bad key, a missing key, an empty x-goog-api-key → 401 UNAUTHENTICATED', async () => {
    const before = await usageCount();
    expectGoogleError(
      await call('/v1beta/models/beta-5.4:generateContent', hello, { 'x-goog-api-key': 'sk-tg-wrong' }),
      401,
      'UNAUTHENTICATED',
    );
    expectGoogleError(await call('/v1beta/models/beta-5.4:generateContent', hello, {}), 401, 'UNAUTHENTICATED');
    expectGoogleError(
      await call('/v1beta/models/beta-5.4:streamGenerateContent?alt=sse', hello, { 'x-goog-api-key': '' }),
      401,
      'UNAUTHENTICATED',
    );
    expectGoogleError(await call('/v1beta/models', undefined, {}, 'GET'), 401, 'UNAUTHENTICATED');
    expect(await usageCount()).toBe(before);
  });
});
