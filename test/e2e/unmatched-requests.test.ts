/**
 * Requests no route serves, over real HTTP: each answered with JSON in the shape of the protocol its path belongs
 * to (hostile-input findings: GET/PUT /v1/messages answered 404 in OpenAI's shape, DELETE /v1/messages
 * 400 invalid_json, a request without Host Node's bare 400, `Expect: 999-x` a bare 417).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawExchange } from '../helpers/raw-http.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

let harness: TestGateway;
let key: string;

beforeAll(async () => {
  harness = await startTestGateway();
  ({ key } = await harness.createAccountWithKey());
}, 60_000);

afterAll(async () => {
  await harness?.close();
});

type Shape = 'openai' | 'anthropic' | 'google' | 'dashboard';

function expectShape(body: unknown, shape: Shape, code: string): void {
  const json = body as { type?: string; error: Record<string, unknown> };
  switch (shape) {
    case 'openai':
      expect(Object.keys(json.error).sort()).toEqual(['code', 'message', 'param', 'type']);
      expect(json.error.code).toBe(code);
      break;
    case 'anthropic':
      expect(json.type).toBe('error');
      expect(Object.keys(json.error).sort()).toEqual(['message', 'type']);
      break;
    case 'google':
      expect(json.error).toMatchObject({
        code: expect.any(Number),
        status: expect.any(String),
        message: expect.any(String),
      });
      expect(JSON.stringify(json.error.details)).toContain(code.toUpperCase());
      break;
    case 'dashboard':
      expect(json.error).toMatchObject({ code, message: expect.any(String) });
      break;
  }
}

async function send(
  method: string,
  path: string,
  init: { body?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Headers; json: unknown; contentType: string }> {
  const response = await fetch(`${harness.gateway.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...init.headers },
    ...(init.body === undefined ? {} : { body: init.body }),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    json: JSON.parse(text),
    contentType: response.headers.get('content-type') ?? '',
  };
}

/** A raw exchange's status, headers and parsed JSON body. */
function parseRaw(raw: string): { status: number; head: string; json: unknown } {
  const [head, body] = raw.split('\r\n\r\n', 2) as [string, string];
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]), head: head.toLowerCase(), json: JSON.parse(body) };
}

describe('a wrong method on a known path: 405 with Allow, in the path protocol shape', () => {
  it.each([
    ['GET', '/v1/messages', 'anthropic', 'POST'],
    ['PUT', '/v1/messages', 'anthropic', 'POST'],
    ['GET', '/v1/chat/completions', 'openai', 'POST'],
    ['DELETE', '/v1/models', 'openai', 'GET, HEAD'],
    ['GET', '/v1beta/models/gamma-2.5-pro:generateContent', 'google', 'POST'],
    ['POST', '/v1beta/models', 'google', 'GET, HEAD'],
  ] as const)('%s %s → 405 (%s shape), Allow: %s', async (method, path, shape, allow) => {
    const reply = await send(method, path);
    expect(reply.status).toBe(405);
    expect(reply.headers.get('allow')).toBe(allow);
    expect(reply.contentType).toContain('application/json');
    expectShape(reply.json, shape, 'method_not_allowed');
  });

  it('DELETE /v1/messages with a JSON content type and no body is still the 405, not invalid_json', async () => {
    const reply = await send('DELETE', '/v1/messages', { headers: { 'content-type': 'application/json' } });
    expect(reply.status).toBe(405);
    expect(reply.headers.get('allow')).toBe('POST');
    expectShape(reply.json, 'anthropic', 'method_not_allowed');
  });
});

describe('unknown paths: a JSON 404 in the path protocol shape', () => {
  it.each([
    ['GET', '/v1/nothing-here', 'openai'],
    ['POST', '/v1/chat/complete', 'openai'],
    ['GET', '/v1/messages/nothing', 'anthropic'],
    ['POST', '/v1/messages/batches', 'anthropic'],
    ['GET', '/v1beta/files', 'google'],
    ['POST', '/v1beta/models/gamma-2.5-pro:embedContent', 'google'],
    ['POST', '/v1beta/models/gamma-2.5-pro:predict', 'google'],
    ['GET', '/api/nothing-here', 'dashboard'],
  ] as const)('%s %s → 404 (%s shape)', async (method, path, shape) => {
    const reply = await send(
      method,
      path,
      method === 'POST' ? { body: '{}', headers: { 'content-type': 'application/json' } } : {},
    );
    expect(reply.status).toBe(404);
    expect(reply.contentType).toContain('application/json');
    expectShape(reply.json, shape, 'not_found');
  });

  it('an API client with a wrong base URL gets JSON, never the dashboard page', async () => {
    const reply = await send('GET', '/models', { headers: { accept: 'application/json' } });
    expect(reply.status).toBe(404);
    expectShape(reply.json, 'openai', 'not_found');
  });
});

describe("what Node's HTTP server used to answer bare", () => {
  it.each([
    ['/v1/chat/completions', 'openai'],
    ['/v1/messages', 'anthropic'],
    ['/v1beta/models', 'google'],
  ] as const)('a request without Host on %s → 400 JSON (%s shape)', async (path, shape) => {
    const raw = await rawExchange(harness.gateway.url, 30_000, `GET ${path} HTTP/1.1\r\nConnection: close\r\n\r\n`);
    const reply = parseRaw(raw);
    expect(reply.status).toBe(400);
    expect(reply.head).toContain('content-type: application/json');
    expectShape(reply.json, shape, 'invalid_request');
  });

  it.each([
    ['/v1/chat/completions', 'openai'],
    ['/v1/messages', 'anthropic'],
    ['/v1beta/models/gamma-2.5-pro:generateContent', 'google'],
  ] as const)('Expect: 999-x on %s → 417 JSON (%s shape)', async (path, shape) => {
    const raw = await rawExchange(
      harness.gateway.url,
      30_000,
      `POST ${path} HTTP/1.1\r\nHost: localhost\r\nExpect: 999-x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`,
    );
    const reply = parseRaw(raw);
    expect(reply.status).toBe(417);
    expect(reply.head).toContain('content-type: application/json');
    expectShape(reply.json, shape, 'expectation_failed');
  });
});
