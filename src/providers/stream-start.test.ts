import { setTimeout as delay } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../canonical/errors.js';
import type { CanonicalEvent } from '../canonical/events.js';
import { primeStream } from './stream-start.js';

const START: CanonicalEvent = { type: 'response-start', id: 'r', model: 'm', created: 0 };
const delta = (text: string): CanonicalEvent => ({ type: 'text-delta', blockId: 'b0', text });

async function collect(events: AsyncIterable<CanonicalEvent>): Promise<CanonicalEvent[]> {
  const all: CanonicalEvent[] = [];
  for await (const event of events) all.push(event);
  return all;
}

describe('primeStream', () => {
  it('reads up to the first output event, then replays it and continues: nothing lost, nothing doubled', async () => {
    let pulled = 0;
    async function* source(): AsyncGenerator<CanonicalEvent> {
      for (const event of [START, delta('a'), delta('b'), delta('c')]) {
        pulled++;
        yield event;
      }
    }
    const primed = await primeStream(source(), 1_000);
    expect(pulled).toBe(2);
    expect(await collect(primed)).toEqual([START, delta('a'), delta('b'), delta('c')]);
  });

  it('a failure before the first output event is thrown by primeStream itself (so the attempt can be retried)', async () => {
    async function* source(): AsyncGenerator<CanonicalEvent> {
      yield START;
      throw new GatewayError('upstream_unavailable', 'overloaded');
    }
    await expect(primeStream(source(), 1_000)).rejects.toMatchObject({ code: 'upstream_unavailable' });
  });

  it('when the window passes first, the stream is handed over with its pending read, and a later failure stays in it', async () => {
    async function* source(): AsyncGenerator<CanonicalEvent> {
      yield START;
      await delay(100);
      yield delta('late');
      throw new GatewayError('upstream_timeout', 'stalled');
    }
    const primed = await primeStream(source(), 10);
    const seen: CanonicalEvent[] = [];
    await expect(
      (async () => {
        for await (const event of primed) seen.push(event);
      })(),
    ).rejects.toMatchObject({ code: 'upstream_timeout' });
    expect(seen).toEqual([START, delta('late')]);
  });

  it('stopping early forwards return(), so the vendor stream runs its cleanup', async () => {
    let cleanedUp = false;
    async function* source(): AsyncGenerator<CanonicalEvent> {
      try {
        yield START;
        yield delta('a');
        yield delta('b');
      } finally {
        cleanedUp = true;
      }
    }
    for await (const event of await primeStream(source(), 1_000)) if (event.type === 'text-delta') break;
    expect(cleanedUp).toBe(true);
  });
});
