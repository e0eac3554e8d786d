import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chunkStamps } from './mock-reply.js';
import { startMockUpstream } from './mock-upstream.js';
import { requestBodyParts, ROUTES, targetsFor } from './scenarios.js';
import type { UpstreamWrites } from './mock-reply.js';

let mock: Awaited<ReturnType<typeof startMockUpstream>>;

beforeAll(async () => {
  mock = await startMockUpstream(0);
});

afterAll(async () => {
  await mock.close();
});

/**
 * One stream from the mock over a raw socket: the pieces as the client's reads got them (one read per socket write
 * the mock made, as long as the client keeps up, which it does on loopback in one process) and the whole text.
 */
async function readStream(
  options: { writes?: UpstreamWrites; stamp?: boolean; chunks?: number; paceMs?: number } = {},
): Promise<{ reads: number; text: string }> {
  const target = targetsFor(ROUTES['same-format'], mock.origin, 'http://unused', 'unused').direct;
  const { before, after } = requestBodyParts(target, true, options.paceMs ?? 0, options);
  const body = `${before}m1${after}`;
  const url = new URL(mock.origin);
  const socket = connect(Number(url.port), url.hostname);
  socket.write(
    `POST ${target.path} HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  let reads = 0;
  let text = '';
  for await (const piece of socket as AsyncIterable<Buffer>) {
    reads++;
    text += piece.toString('utf8');
  }
  return { reads, text };
}

describe('how the mock writes a stream', () => {
  it('writes each event on its own by default, so the client reads them one by one', async () => {
    const { reads, text } = await readStream();
    const events = text.split('\n\n').filter((event) => event.includes('data: ')).length;
    // 20 content deltas, the role delta, the finish, the usage and [DONE].
    expect(events).toBe(24);
    expect(reads).toBeGreaterThanOrEqual(events / 2);
  });

  it('sends a tick’s events in one write when asked for the coalesced shape', async () => {
    const { reads, text } = await readStream({ writes: 'coalesced' });
    expect(text.split('\n\n').filter((event) => event.includes('data: ')).length).toBe(24);
    expect(reads).toBeLessThanOrEqual(3);
  });

  it('stamps each content delta after the first with the time it was written', async () => {
    const startedAt = performance.timeOrigin + performance.now();
    const { text } = await readStream({ stamp: true, chunks: 5, paceMs: 20 });
    const stamps = chunkStamps(text);
    expect(text).toContain('Reply m1:');
    expect(stamps).toHaveLength(4);
    for (const [index, stamp] of stamps.entries()) {
      expect(stamp).toBeGreaterThan(startedAt);
      if (index > 0) expect(stamp - (stamps[index - 1] ?? 0)).toBeGreaterThanOrEqual(15);
    }
  });
});
