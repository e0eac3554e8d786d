import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { accumulate } from '../../canonical/accumulate.js';
import { GatewayError } from '../../canonical/errors.js';
import { anthropicRetryAfter } from './anthropic-map-error.js';
import { AnthropicProvider } from './anthropic-provider.js';
import { canonicalRequest, TEST_MODEL } from '../../../test/helpers/anthropic-test-fixtures.js';

interface Seen {
  method: string | undefined;
  url: string | undefined;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
}

/** What the fake upstream does with the next request. */
type Reply = (response: ServerResponse) => void;

const MESSAGE = {
  id: 'msg_01',
  type: 'message',
  role: 'assistant',
  model: 'claude-sonnet-5',
  content: [{ type: 'text', text: 'Hello there.' }],
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage: { input_tokens: 12, output_tokens: 4 },
};

const STREAM_EVENTS = [
  [
    'message_start',
    {
      type: 'message_start',
      message: { ...MESSAGE, content: [], stop_reason: null, usage: { input_tokens: 12, output_tokens: 1 } },
    },
  ],
  ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
  ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello ' } }],
  ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'there.' } }],
  ['content_block_stop', { type: 'content_block_stop', index: 0 }],
  [
    'message_delta',
    { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 4 } },
  ],
  ['message_stop', { type: 'message_stop' }],
] as const;

const sseText = (events: ReadonlyArray<readonly [string, unknown]>) =>
  events.map(([name, data]) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`).join('');

function json(status: number, body: unknown, headers: Record<string, string> = {}): Reply {
  return (response) => {
    response.writeHead(status, { 'content-type': 'application/json', 'request-id': 'req_test_1', ...headers });
    response.end(typeof body === 'string' ? body : JSON.stringify(body));
  };
}

function stream(text: string, options: { cut?: boolean } = {}): Reply {
  return (response) => {
    response.writeHead(200, { 'content-type': 'text/event-stream', 'request-id': 'req_stream_1' });
    // Several writes, so the client sees the body in pieces.
    const third = Math.ceil(text.length / 3);
    response.write(text.slice(0, third));
    setTimeout(() => {
      response.write(text.slice(third, 2 * third));
      setTimeout(() => {
        if (options.cut) response.destroy();
        else response.end(text.slice(2 * third));
      }, 5);
    }, 5);
  };
}

let server: Server;
let origin: string;
let seen: Seen[] = [];
let nextReply: Reply = json(200, MESSAGE);

beforeAll(async () => {
  server = createServer((request, response) => {
    let raw = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (raw += chunk));
    request.on('end', () => {
      seen.push({
        method: request.method,
        url: request.url,
        headers: request.headers,
        body: JSON.parse(raw) as Record<string, unknown>,
      });
      nextReply(response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

beforeEach(() => {
  seen = [];
  nextReply = json(200, MESSAGE);
});

function provider(baseUrl = origin): AnthropicProvider {
  return new AnthropicProvider({ baseUrl, apiKey: 'sk-ant-test-key' });
}

async function callError(adapter: AnthropicProvider, request = canonicalRequest()): Promise<GatewayError> {
  try {
    const response = await adapter.call({
      request,
      model: TEST_MODEL,
      signal: new AbortController().signal,
      requestId: 'r1',
    });
    await accumulate(response.events);
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayError);
    return error as GatewayError;
  }
  throw new Error('expected a GatewayError');
}

describe('AnthropicProvider', () => {
  it('POSTs /v1/messages (under a path prefix) with x-api-key and anthropic-version, and maps the reply', async () => {
    const adapter = provider(`${origin}/anthropic`);
    try {
      const response = await adapter.call({
        request: canonicalRequest({ sampling: { seed: 3 } }),
        model: TEST_MODEL,
        signal: new AbortController().signal,
        requestId: 'r1',
      });
      expect(response.upstreamRequestId).toBe('req_test_1');
      expect(response.droppedParameters).toEqual(['seed']);
      const reply = await accumulate(response.events);
      expect(reply.content).toEqual([{ type: 'text', text: 'Hello there.' }]);
      expect(reply.usage).toMatchObject({ inputTokens: 12, outputTokens: 4 });
      expect(seen[0]).toMatchObject({ method: 'POST', url: '/anthropic/v1/messages' });
      expect(seen[0]!.headers).toMatchObject({
        'x-api-key': 'sk-ant-test-key',
        'anthropic-version': '2023-06-01',
        'content-type': 'application/json',
      });
      expect(seen[0]!.headers).not.toHaveProperty('anthropic-beta');
      expect(seen[0]!.headers).not.toHaveProperty('authorization');
      expect(seen[0]!.body).toMatchObject({ model: 'claude-sonnet-5', max_tokens: 8192, stream: false });
    } finally {
      await adapter.close();
    }
  });

  it("forwards an Anthropic client's anthropic-beta header", async () => {
    const adapter = provider();
    try {
      const request = canonicalRequest({
        extensionsProtocol: 'anthropic-messages',
        extensions: { 'anthropic-beta': 'interleaved-thinking-2025-05-14' },
      });
      await accumulate(
        (await adapter.call({ request, model: TEST_MODEL, signal: new AbortController().signal, requestId: 'r1' }))
          .events,
      );
      expect(seen[0]!.headers['anthropic-beta']).toBe('interleaved-thinking-2025-05-14');
    } finally {
      await adapter.close();
    }
  });

  it('streams: SSE arriving in pieces maps to the canonical events', async () => {
    nextReply = stream(sseText(STREAM_EVENTS));
    const adapter = provider();
    try {
      const response = await adapter.call({
        request: canonicalRequest({ stream: true }),
        model: TEST_MODEL,
        signal: new AbortController().signal,
        requestId: 'r1',
      });
      expect(response.upstreamRequestId).toBe('req_stream_1');
      const reply = await accumulate(response.events);
      expect(reply.content).toEqual([{ type: 'text', text: 'Hello there.' }]);
      expect(reply.finishReason).toBe('stop');
      expect(reply.usage).toMatchObject({ inputTokens: 12, outputTokens: 4 });
      expect(seen[0]!.body.stream).toBe(true);
    } finally {
      await adapter.close();
    }
  });

  it('a stream the upstream cuts before message_stop fails with upstream_bad_response', async () => {
    nextReply = stream(sseText(STREAM_EVENTS.slice(0, 4)), { cut: true });
    const adapter = provider();
    try {
      const error = await callError(adapter, canonicalRequest({ stream: true }));
      expect(error.code).toBe('upstream_bad_response');
      expect(error.message).toMatch(/ended the stream before the reply was complete/);
    } finally {
      await adapter.close();
    }
  });

  it('a stream that ends cleanly but early is reported as incomplete', async () => {
    nextReply = stream(sseText(STREAM_EVENTS.slice(0, 5)));
    const adapter = provider();
    try {
      const error = await callError(adapter, canonicalRequest({ stream: true }));
      expect(error.code).toBe('upstream_bad_response');
      expect(error.message).toMatch(/ended the stream before the reply was complete/);
    } finally {
      await adapter.close();
    }
  });

  it('an error event mid-stream becomes the mapped gateway error', async () => {
    nextReply = stream(
      sseText([
        ...STREAM_EVENTS.slice(0, 3),
        ['error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }],
      ]),
    );
    const adapter = provider();
    try {
      const error = await callError(adapter, canonicalRequest({ stream: true }));
      expect(error.code).toBe('upstream_unavailable');
    } finally {
      await adapter.close();
    }
  });

  it.each([
    [400, 'invalid_request_error', 'upstream_invalid_request', 400],
    [401, 'authentication_error', 'upstream_auth_failed', 502],
    [404, 'not_found_error', 'upstream_not_found', 404],
    [429, 'rate_limit_error', 'upstream_rate_limited', 429],
    [500, 'api_error', 'upstream_server_error', 500],
    [529, 'overloaded_error', 'upstream_unavailable', 503],
  ])('HTTP %i (%s) → %s', async (status, type, code, gatewayStatus) => {
    nextReply = json(
      status,
      { type: 'error', error: { type, message: `vendor says ${type}` }, request_id: 'req_x' },
      status === 429 ? { 'retry-after': '7' } : {},
    );
    const adapter = provider();
    try {
      const error = await callError(adapter);
      expect(error.code).toBe(code);
      expect(error.status).toBe(gatewayStatus);
      expect(error.upstreamCode).toBe(type);
      if (status === 429) expect(error.retryAfterSeconds).toBe(7);
      if (status === 400) expect(error.message).toMatch(/vendor says invalid_request_error/);
      // The gateway's own key problem is never blamed on the client, and the key never shows.
      if (status === 401) expect(error.message).toMatch(/not a problem with your API key/);
      expect(error.message).not.toMatch(/sk-ant-test-key/);
    } finally {
      await adapter.close();
    }
  });

  it('a non-JSON error body (the edge proxy 413) still maps by status', async () => {
    nextReply = json(413, '<html>Request Entity Too Large</html>');
    const adapter = provider();
    try {
      expect((await callError(adapter)).code).toBe('upstream_payload_too_large');
    } finally {
      await adapter.close();
    }
  });

  it('request-side 400s are raised before any upstream call', async () => {
    const adapter = provider();
    try {
      const error = await callError(
        adapter,
        canonicalRequest({ messages: [{ role: 'user', content: [{ type: 'text', text: ' ' }] }] }),
      );
      expect(error.code).toBe('invalid_request');
      expect(seen).toHaveLength(0);
    } finally {
      await adapter.close();
    }
  });

  it('countTokens calls /v1/messages/count_tokens and returns input_tokens', async () => {
    nextReply = json(200, { input_tokens: 1234 });
    const adapter = provider();
    try {
      const count = await adapter.countTokens(
        canonicalRequest({ maxOutputTokens: 50, stream: true }),
        TEST_MODEL,
        new AbortController().signal,
      );
      expect(count).toBe(1234);
      expect(seen[0]).toMatchObject({ method: 'POST', url: '/v1/messages/count_tokens' });
      expect(seen[0]!.headers).toMatchObject({ 'x-api-key': 'sk-ant-test-key', 'anthropic-version': '2023-06-01' });
      expect(seen[0]!.body).toEqual({
        model: 'claude-sonnet-5',
        messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello' }] }],
      });
    } finally {
      await adapter.close();
    }
  });

  it('countTokens maps upstream errors and malformed replies', async () => {
    const adapter = provider();
    try {
      nextReply = json(404, { type: 'error', error: { type: 'not_found_error', message: 'model: claude-x' } });
      await expect(
        adapter.countTokens(canonicalRequest(), TEST_MODEL, new AbortController().signal),
      ).rejects.toMatchObject({ code: 'upstream_not_found' });
      nextReply = json(200, { tokens: 3 });
      await expect(
        adapter.countTokens(canonicalRequest(), TEST_MODEL, new AbortController().signal),
      ).rejects.toMatchObject({ code: 'upstream_bad_response' });
    } finally {
      await adapter.close();
    }
  });
});

describe('anthropicRetryAfter', () => {
  const now = Date.parse('2026-05-01T12:00:00Z');
  it('prefers retry-after', () => {
    expect(
      anthropicRetryAfter(
        {
          statusCode: 429,
          headers: { 'retry-after': '12', 'anthropic-ratelimit-requests-reset': '2026-05-01T12:00:30Z' },
        },
        now,
      ),
    ).toBe(12);
  });
  it('on a 429 without retry-after, derives the wait from anthropic-ratelimit-requests-reset (RFC 3339)', () => {
    expect(
      anthropicRetryAfter(
        { statusCode: 429, headers: { 'anthropic-ratelimit-requests-reset': '2026-05-01T12:00:30.200Z' } },
        now,
      ),
    ).toBe(31);
    expect(
      anthropicRetryAfter(
        { statusCode: 429, headers: { 'anthropic-ratelimit-requests-reset': '2026-05-01T11:59:00Z' } },
        now,
      ),
    ).toBe(0);
    expect(
      anthropicRetryAfter({ statusCode: 429, headers: { 'anthropic-ratelimit-requests-reset': 'soon' } }, now),
    ).toBeUndefined();
  });
  it('other statuses take no hint from the rate-limit headers', () => {
    expect(
      anthropicRetryAfter(
        { statusCode: 400, headers: { 'anthropic-ratelimit-requests-reset': '2026-05-01T12:00:30Z' } },
        now,
      ),
    ).toBeUndefined();
  });
});
