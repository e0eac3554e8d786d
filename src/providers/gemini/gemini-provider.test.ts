import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { accumulate } from '../../canonical/accumulate.js';
import { GatewayError } from '../../canonical/errors.js';
import type { CanonicalRequest } from '../../canonical/request.js';
import { ModelCatalog, type CatalogModel } from '../../catalog/model-catalog.js';
import { GeminiProvider } from './gemini-provider.js';

interface Recorded {
  method: string | undefined;
  url: string | undefined;
  headers: IncomingMessage['headers'];
  body: unknown;
}

/** A stand-in vendor on a loopback port: records each request and answers with the handler of the test. */
let server: Server;
let origin: string;
let recorded: Recorded[] = [];
let respond: (response: ServerResponse) => void = (response) => response.end();

beforeAll(async () => {
  server = createServer((request, response) => {
    let text = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (text += chunk));
    request.on('end', () => {
      recorded.push({ method: request.method, url: request.url, headers: request.headers, body: JSON.parse(text) });
      respond(response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

beforeEach(() => {
  recorded = [];
});

const MODEL: CatalogModel = new ModelCatalog().resolve('gamma-2.5-pro');

function request(stream: boolean): CanonicalRequest {
  return {
    model: 'gamma-2.5-pro',
    system: [{ type: 'text', text: 'Be brief.' }],
    messages: [{ role: 'user', content: [{ type: 'text', text: 'Rain in Lisbon?' }] }],
    sampling: { temperature: 0.2 },
    stream,
    extensions: {},
    extensionsProtocol: 'openai-chat',
  };
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): (response: ServerResponse) => void {
  return (response) => {
    response.writeHead(status, { 'content-type': 'application/json', ...headers });
    response.end(JSON.stringify(body));
  };
}

/** SSE with CRLF framing, written in several pieces that split events mid-line. */
function sse(chunks: readonly object[]): (response: ServerResponse) => void {
  return (response) => {
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    const text = chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\r\n\r\n`).join('');
    const third = Math.floor(text.length / 3);
    response.write(text.slice(0, third));
    response.write(text.slice(third, 2 * third));
    response.end(text.slice(2 * third));
  };
}

describe('GeminiProvider', () => {
  it('POSTs generateContent under the base URL path with the key in x-goog-api-key, never in the URL', async () => {
    const provider = new GeminiProvider({ baseUrl: `${origin}/gemini`, apiKey: 'AIzaSyTestKey0123456789' });
    respond = json(200, {
      candidates: [{ content: { role: 'model', parts: [{ text: 'Light rain.' }] }, finishReason: 'STOP', index: 0 }],
      usageMetadata: { promptTokenCount: 9, candidatesTokenCount: 3, totalTokenCount: 12 },
      modelVersion: 'gemini-2.5-pro',
      responseId: 'r-1',
    });
    try {
      const response = await provider.call({
        request: request(false),
        model: MODEL,
        signal: new AbortController().signal,
        requestId: 'req-1',
      });
      const reply = await accumulate(response.events);
      expect(reply.content).toEqual([{ type: 'text', text: 'Light rain.' }]);
      expect(reply.finishReason).toBe('stop');
      expect(reply.usage).toMatchObject({ inputTokens: 9, outputTokens: 3 });
      const [sent] = recorded;
      expect(sent!.method).toBe('POST');
      expect(sent!.url).toBe('/gemini/v1beta/models/gemini-2.5-pro:generateContent');
      expect(sent!.headers['x-goog-api-key']).toBe('AIzaSyTestKey0123456789');
      expect(sent!.url).not.toContain('key');
      expect(sent!.body).toEqual({
        contents: [{ role: 'user', parts: [{ text: 'Rain in Lisbon?' }] }],
        systemInstruction: { parts: [{ text: 'Be brief.' }] },
        generationConfig: { temperature: 0.2 },
      });
    } finally {
      await provider.close();
    }
  });

  it('streams from streamGenerateContent?alt=sse and maps the chunks as they come', async () => {
    const provider = new GeminiProvider({ baseUrl: origin, apiKey: 'k' });
    respond = sse([
      {
        candidates: [{ content: { role: 'model', parts: [{ text: 'Let me check.' }] }, index: 0 }],
        modelVersion: 'gemini-2.5-pro',
        responseId: 'r-2',
      },
      {
        candidates: [
          {
            content: {
              role: 'model',
              parts: [{ functionCall: { name: 'lookup_weather', args: { city: 'Lisbon' } }, thoughtSignature: 'c2ln' }],
            },
            index: 0,
          },
        ],
      },
      {
        candidates: [{ content: { role: 'model', parts: [{ text: '' }] }, finishReason: 'STOP', index: 0 }],
        usageMetadata: { promptTokenCount: 20, candidatesTokenCount: 8, thoughtsTokenCount: 30, totalTokenCount: 58 },
      },
    ]);
    try {
      const response = await provider.call({
        request: request(true),
        model: MODEL,
        signal: new AbortController().signal,
        requestId: 'req-2',
      });
      const reply = await accumulate(response.events);
      expect(recorded[0]!.url).toBe('/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse');
      expect(reply.content.map((block) => block.type)).toEqual(['text', 'tool-call']);
      expect(reply.finishReason).toBe('tool-calls');
      expect(reply.usage).toMatchObject({ inputTokens: 20, outputTokens: 38, reasoningTokens: 30 });
    } finally {
      await provider.close();
    }
  });

  it('a stream that ends without a finish reason fails the iteration with upstream_bad_response', async () => {
    const provider = new GeminiProvider({ baseUrl: origin, apiKey: 'k' });
    respond = sse([{ candidates: [{ content: { role: 'model', parts: [{ text: 'Light' }] }, index: 0 }] }]);
    try {
      const response = await provider.call({
        request: request(true),
        model: MODEL,
        signal: new AbortController().signal,
        requestId: 'req-3',
      });
      await expect(accumulate(response.events)).rejects.toMatchObject({ code: 'upstream_bad_response' });
    } finally {
      await provider.close();
    }
  });

  it('turns an error reply into the gateway error of its status, with RetryInfo as retry-after', async () => {
    const provider = new GeminiProvider({ baseUrl: origin, apiKey: 'k' });
    respond = json(429, {
      error: {
        code: 429,
        message: 'Resource has been exhausted (e.g. check quota).',
        status: 'RESOURCE_EXHAUSTED',
        details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '7s' }],
      },
    });
    try {
      const call = provider.call({
        request: request(false),
        model: MODEL,
        signal: new AbortController().signal,
        requestId: 'req-4',
      });
      await expect(call).rejects.toBeInstanceOf(GatewayError);
      await expect(call).rejects.toMatchObject({
        code: 'upstream_rate_limited',
        retryAfterSeconds: 7,
        upstreamCode: 'RESOURCE_EXHAUSTED',
      });
    } finally {
      await provider.close();
    }
  });

  it('counts tokens with :countTokens over the whole prompt', async () => {
    const provider = new GeminiProvider({ baseUrl: origin, apiKey: 'k' });
    respond = json(200, { totalTokens: 17 });
    try {
      await expect(provider.countTokens(request(false), MODEL, new AbortController().signal)).resolves.toBe(17);
      expect(recorded[0]!.url).toBe('/v1beta/models/gemini-2.5-pro:countTokens');
      expect(recorded[0]!.body).toEqual({
        generateContentRequest: {
          model: 'models/gemini-2.5-pro',
          contents: [{ role: 'user', parts: [{ text: 'Rain in Lisbon?' }] }],
          systemInstruction: { parts: [{ text: 'Be brief.' }] },
        },
      });
    } finally {
      await provider.close();
    }
  });
});
