import { describe, expect, it } from 'vitest';
import type { SseEvent } from './sse-decoder.js';
import { SseMappedStream, type SseEventMapper } from './sse-mapped-stream.js';

const bytes = (text: string) => new TextEncoder().encode(text);

async function* body(chunks: string[], failAfter?: Error): AsyncGenerator<Uint8Array> {
  for (const chunk of chunks) yield bytes(chunk);
  if (failAfter !== undefined) throw failAfter;
}

/** Maps `data: x` to `x`; `data: boom` throws; `data: stop` completes the stream. */
class TestMapper implements SseEventMapper<string> {
  complete = false;
  ended = 0;
  map(event: SseEvent): string[] {
    if (event.data === 'boom') throw new Error('bad chunk');
    if (event.data === 'stop') this.complete = true;
    return [event.data];
  }
  end(): string[] {
    this.ended++;
    if (!this.complete) throw new Error('cut off');
    return ['end'];
  }
}

function stream(chunks: string[], failAfter?: Error) {
  const mapper = new TestMapper();
  let released = 0;
  const events = new SseMappedStream<string>(body(chunks, failAfter), {
    mapper,
    isComplete: () => mapper.complete,
    wrapError: (error) => new Error(`wrapped: ${(error as Error).message}`),
    release: () => released++,
  });
  return { events, mapper, released: () => released };
}

async function collect(events: AsyncIterable<string>): Promise<{ out: string[]; error?: string }> {
  const out: string[] = [];
  try {
    for await (const event of events) out.push(event);
  } catch (error) {
    return { out, error: (error as Error).message };
  }
  return { out };
}

describe('SseMappedStream', () => {
  it('maps the events of each chunk in order, stops at the terminal event, then gives the end events', async () => {
    const { events, released } = stream(['data: a\n\ndata: b\n\n', 'data: stop\n\ndata: after\n\n', 'data: never\n\n']);
    expect(await collect(events)).toEqual({ out: ['a', 'b', 'stop', 'end'] });
    expect(released()).toBe(1);
  });

  it('throws a mapping failure, wrapped, after the events mapped before it', async () => {
    const { events, released } = stream(['data: a\n\ndata: boom\n\ndata: c\n\n']);
    expect(await collect(events)).toEqual({ out: ['a'], error: 'wrapped: bad chunk' });
    expect(released()).toBe(1);
  });

  it('wraps a body failure and throws the end verdict as it is', async () => {
    expect(await collect(stream(['data: a\n\n'], new Error('reset')).events)).toEqual({ out: ['a'], error: 'wrapped: reset' });
    const cut = stream(['data: a\n\n']);
    expect(await collect(cut.events)).toEqual({ out: ['a'], error: 'cut off' });
    expect(cut.released()).toBe(1);
  });

  it('releases the body once when the consumer leaves early, and ends', async () => {
    const { events, mapper, released } = stream(['data: a\n\n', 'data: b\n\n']);
    for await (const event of events) {
      expect(event).toBe('a');
      break;
    }
    expect(released()).toBe(1);
    expect(mapper.ended).toBe(0);
    expect(await events.next()).toEqual({ done: true, value: undefined });
    expect(released()).toBe(1);
  });
});
