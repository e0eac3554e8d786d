import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { accumulate } from '../../canonical/accumulate.js';
import { GatewayError } from '../../canonical/errors.js';
import type { CanonicalRequest } from '../../canonical/request.js';
import { ModelCatalog, type CatalogModel } from '../../catalog/model-catalog.js';
import { DeepSeekProvider } from './deepseek-provider.js';

interface Seen {
  method: string | undefined;
  url: string | undefined;
  authorization: string | undefined;
  body: Record<string, unknown>;
}

type Reply = (response: ServerResponse) => void;

const REASONER: CatalogModel = new ModelCatalog().resolve('delta-r1');

const USAGE = {
  prompt_tokens: 20,
  completion_tokens: 9,
  total_tokens: 29,
  prompt_cache_hit_tokens: 16,
  prompt_cache_miss_tokens: 4,
};

let server: Server;
let origin: string;
let seen: Seen[] = [];
let reply: Reply = (response) => response.end();
const providers: DeepSeekProvider[] = [];

beforeAll(async () => {
  server = createServer((request: IncomingMessage, response: ServerResponse) => {
    let text = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (text += chunk));
    request.on('end', () => {
      seen.push({
        method: request.method,
        url: request.url,
        authorization: request.headers.authorization,
        body: JSON.parse(text) as Record<string, unknown>,
      });
      reply(response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(async () => {
  await Promise.all(providers.splice(0).map((provider) => provider.close()));
  seen = [];
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function provider(baseUrl = origin): DeepSeekProvider {
  const created = new DeepSeekProvider({ baseUrl, apiKey: 'sk-test-deepseek' });
  providers.push(created);
  return created;
}

function request(overrides: Partial<CanonicalRequest> = {}): CanonicalRequest {
  return {
    model: 'delta-r1',
    system: [],
    messages: [{ role: 'user', content: [{ type: 'text', text: '9.11 or 9.8?' }] }],
    sampling: {},
    stream: false,
    extensions: {},
    extensionsProtocol: 'openai-chat',
    ...overrides,
  };
}

function call(target: DeepSeekProvider, canonical: CanonicalRequest = request()) {
  return target.call({ request: canonical, model: REASONER, signal: new AbortController().signal, requestId: 'req-1' });
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Reply {
  return (response) => {
    response.writeHead(status, { 'content-type': 'application/json', ...headers });
    response.end(JSON.stringify(body));
  };
}

async function callError(target: DeepSeekProvider): Promise<GatewayError> {
  try {
    await call(target);
  } catch (error) {
    if (error instanceof GatewayError) return error;
    throw error;
  }
  throw new Error('expected the call to fail');
}

describe('DeepSeekProvider', () => {
  it('posts to /chat/completions with a bearer key and reads a JSON reply preceded by keep-alive blank lines', async () => {
    reply = (response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'x-ds-trace-id': 'trace-42' });
      // Under load DeepSeek sends blank lines while the reply is being generated
      // (docs/protocols/wire-deepseek.md#stream).
      response.write('\n\n');
      response.end(
        JSON.stringify({
          id: 'ds-1',
          object: 'chat.completion',
          created: 1,
          model: 'deepseek-reasoner',
          choices: [
            {
              index: 0,
              finish_reason: 'stop',
              message: { role: 'assistant', reasoning_content: '9.8 has more tenths.', content: '9.8' },
            },
          ],
          usage: USAGE,
        }),
      );
    };
    const result = await call(provider(), request({ sampling: { temperature: 0.5 } }));
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({
      method: 'POST',
      url: '/chat/completions',
      authorization: 'Bearer sk-test-deepseek',
    });
    expect(seen[0]!.body).toMatchObject({
      model: 'deepseek-reasoner',
      messages: [{ role: 'user', content: '9.11 or 9.8?' }],
      stream: false,
    });
    expect(result.droppedParameters).toEqual(['temperature']);
    expect(result.upstreamRequestId).toBe('trace-42');
    const completion = await accumulate(result.events);
    expect(completion.content).toEqual([
      { type: 'reasoning', text: '9.8 has more tenths.' },
      { type: 'text', text: '9.8' },
    ]);
    expect(completion.usage).toMatchObject({ inputTokens: 4, cacheReadTokens: 16, outputTokens: 9 });
  });

  it('streams, skipping keep-alive comments, and keeps a base URL path prefix (a simulator mount)', async () => {
    const chunk = '"id":"ds-2","object":"chat.completion.chunk","created":1,"model":"deepseek-reasoner"';
    reply = (response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.end(
        [
          ': keep-alive',
          `data: {${chunk},"choices":[{"index":0,"delta":{"role":"assistant","content":null,"reasoning_content":"Compare."},"finish_reason":null}]}`,
          ': keep-alive',
          `data: {${chunk},"choices":[{"index":0,"delta":{"content":"9.8"},"finish_reason":null}]}`,
          `data: {${chunk},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"stop"}],"usage":${JSON.stringify(USAGE)}}`,
          'data: [DONE]',
        ]
          .map((line) => `${line}\n\n`)
          .join(''),
      );
    };
    const result = await call(provider(`${origin}/deepseek`), request({ stream: true }));
    expect(seen[0]!.url).toBe('/deepseek/chat/completions');
    expect(seen[0]!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    const streamed = await accumulate(result.events);
    expect(streamed.content).toEqual([
      { type: 'reasoning', text: 'Compare.' },
      { type: 'text', text: '9.8' },
    ]);
    expect(streamed.usage).toMatchObject({ inputTokens: 4, cacheReadTokens: 16 });
  });

  it("402 (the gateway's DeepSeek balance) becomes a 502 addressed to the operator, not the client", async () => {
    reply = json(402, {
      error: { message: 'Insufficient Balance', type: 'unknown_error', param: null, code: 'invalid_request_error' },
    });
    const error = await callError(provider());
    expect(error).toMatchObject({ code: 'upstream_auth_failed', status: 502, retryable: false });
    expect(error.message).toMatch(/DeepSeek account has run out of balance \(HTTP 402\)/);
    expect(error.message).toMatch(/not a problem with your API key/);
  });

  it('422 is an invalid request carrying DeepSeek’s message; 400 likewise', async () => {
    reply = json(422, {
      error: {
        message: 'Invalid max_tokens value',
        type: 'invalid_request_error',
        param: null,
        code: 'invalid_request_error',
      },
    });
    const invalid = await callError(provider());
    expect(invalid).toMatchObject({ code: 'upstream_invalid_request', status: 400 });
    expect(invalid.message).toBe('DeepSeek returned HTTP 422: Invalid max_tokens value');
    reply = json(400, {
      error: {
        message: 'The `reasoning_content` in the thinking mode must be passed back to the API.',
        type: 'invalid_request_error',
        param: null,
        code: 'invalid_request_error',
      },
    });
    expect(await callError(provider())).toMatchObject({ code: 'upstream_invalid_request', status: 400 });
  });

  it('503 (server busy) is unavailable and retryable; 429 keeps retry-after; 401 blames the gateway key', async () => {
    reply = json(503, { error: { message: 'Server busy', type: 'server_error', param: null, code: null } });
    expect(await callError(provider())).toMatchObject({ code: 'upstream_unavailable', status: 503, retryable: true });
    reply = json(
      429,
      { error: { message: 'Rate limit reached', type: 'rate_limit_error', param: null, code: null } },
      { 'retry-after': '7' },
    );
    expect(await callError(provider())).toMatchObject({
      code: 'upstream_rate_limited',
      status: 429,
      retryAfterSeconds: 7,
    });
    reply = json(401, {
      error: {
        message: 'Authentication Fails (sk-abcdefghijklmnop)',
        type: 'authentication_error',
        param: null,
        code: null,
      },
    });
    const auth = await callError(provider());
    expect(auth).toMatchObject({ code: 'upstream_auth_failed', status: 502 });
    expect(auth.message).not.toContain('sk-');
  });

  it('refuses an image before anything is sent to DeepSeek', async () => {
    const withImage = request({
      messages: [
        { role: 'user', content: [{ type: 'image', source: { kind: 'url', url: 'https://example.com/a.png' } }] },
      ],
    });
    await expect(call(provider(), withImage)).rejects.toMatchObject({ code: 'unsupported_parameter', status: 400 });
    expect(seen).toHaveLength(0);
  });
});
