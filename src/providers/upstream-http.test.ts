import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UpstreamHttp } from './upstream-http.js';

/** More streams than any fixed pool size a gateway might pick (undici's examples use 10 to 256). */
const STREAMS = 300;

describe('the upstream connection pool', () => {
  const waiting: ServerResponse[] = [];
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    response.write('data: {}\n\n');
    waiting.push(response);
    // The vendor ends every stream only once all of them are open at once, as long agent streams are.
    if (waiting.length === STREAMS) for (const open of waiting) open.end('data: [DONE]\n\n');
  });
  let upstream: UpstreamHttp;

  beforeAll(async () => {
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    upstream = new UpstreamHttp({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` });
  });
  afterAll(async () => {
    await upstream.close();
    server.close();
  });

  it('holds as many concurrent streams to one origin as clients open, none queued behind another', async () => {
    const replies = await Promise.all(
      Array.from({ length: STREAMS }, async () => {
        const response = await upstream.post('/chat', {}, '{}', AbortSignal.timeout(15_000), true);
        return { status: response.statusCode, body: await response.body.text() };
      }),
    );
    expect(waiting).toHaveLength(STREAMS);
    expect(new Set(replies.map((reply) => `${reply.status} ${reply.body}`))).toEqual(
      new Set(['200 data: {}\n\ndata: [DONE]\n\n']),
    );
  }, 30_000);
});
