import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { startFloorProxy } from './floor-proxy.js';
import { startMockUpstream } from './mock-upstream.js';
import { replyText } from './mock-reply.js';
import { jsonReplyProblem, StreamCheck } from './response-checks.js';
import { requestBodyParts, ROUTES, targetsFor, type RouteId } from './scenarios.js';

let mock: Awaited<ReturnType<typeof startMockUpstream>>;
let floor: Awaited<ReturnType<typeof startFloorProxy>>;

beforeAll(async () => {
  mock = await startMockUpstream(0);
  floor = await startFloorProxy(mock.origin, 0);
});

afterAll(async () => {
  await floor.close();
  await mock.close();
});

/** One request through the floor, as the bench's floor target sends it. */
async function viaFloor(routeId: RouteId, stream: boolean, nonce: string) {
  const target = targetsFor(ROUTES[routeId], mock.origin, 'http://unused', 'unused', floor.origin).floor;
  if (target === undefined) throw new Error('no floor target');
  const { before, after } = requestBodyParts(target, stream, 0);
  return await request(`${target.origin}${target.path}`, {
    method: 'POST',
    body: before + nonce + after,
    headers: { 'content-type': 'application/json' },
  });
}

describe.each([
  ['openai', 'same-format'],
  ['anthropic', 'openai-to-anthropic'],
] as const)('the floor proxy in front of the mock (%s)', (protocol, routeId) => {
  it('passes a JSON reply through with its status, content type and length, and the direct checks accept it', async () => {
    const response = await viaFloor(routeId, false, 'f1');
    const text = await response.body.text();
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('application/json');
    expect(Number(response.headers['content-length'])).toBe(Buffer.byteLength(text));
    expect(jsonReplyProblem(protocol, text, replyText('f1'))).toBeUndefined();
  });

  it('passes a stream through as it comes, and the direct checks accept it', async () => {
    const response = await viaFloor(routeId, true, 'f2');
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/event-stream');
    const check = new StreamCheck(protocol, replyText('f2'));
    for await (const piece of response.body as AsyncIterable<Buffer>) check.push(piece);
    expect(check.finish()).toBeUndefined();
  });
});

it('passes an error status and body through unchanged', async () => {
  const response = await request(`${floor.origin}/nowhere`, {
    method: 'POST',
    body: '{}',
    headers: { 'content-type': 'application/json' },
  });
  expect(response.statusCode).toBe(404);
  expect(await response.body.text()).toContain('the bench mock serves only chat completions and messages');
});
