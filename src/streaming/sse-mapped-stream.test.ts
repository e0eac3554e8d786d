import { createServer, type Server } from 'node:http';
import { PassThrough } from 'node:stream';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
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
  it('runs each chunk through the step it was read for, when the reader changes its step between chunks', async () => {
    const { events } = stream(['data: a\n\n', 'data: b\n\n', 'data: c\n\n', 'data: d\n\n', 'data: stop\n\n']);
    const seen: string[] = [];
    const tagged = (tag: string) => (batch: readonly string[] | undefined) => {
      seen.push(`${tag}:${batch?.join(',') ?? 'over'}`);
      return batch;
    };
    const first = tagged('first');
    // The same step twice (kept between chunks), another, a plain nextBatch, then the first again.
    await events.nextBatchThen(first);
    await events.nextBatchThen(first);
    await events.nextBatchThen(tagged('second'));
    seen.push(`plain:${(await events.nextBatch())?.join(',')}`);
    await events.nextBatchThen(first);
    await events.nextBatchThen(first);
    expect(seen).toEqual(['first:a', 'first:b', 'second:c', 'plain:d', 'first:stop', 'first:end']);
  });

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
    expect(await collect(stream(['data: a\n\n'], new Error('reset')).events)).toEqual({
      out: ['a'],
      error: 'wrapped: reset',
    });
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

  it('hands out the events of one chunk as one batch, sharing its position with next()', async () => {
    const { events, released } = stream([
      'data: a\n\ndata: b\n\ndata: c\n\n',
      'data: partial',
      '\n\n',
      'data: stop\n\n',
    ]);
    expect(await events.next()).toEqual({ done: false, value: 'a' });
    expect(await events.nextBatch()).toEqual(['b', 'c']);
    // A chunk that completes no event is read through: a batch is never empty.
    expect(await events.nextBatch()).toEqual(['partial']);
    expect(await events.nextBatch()).toEqual(['stop']);
    expect(await events.nextBatch()).toEqual(['end']);
    expect(await events.nextBatch()).toBeUndefined();
    expect(released()).toBe(1);
  });

  it('maps the chunks a Readable already holds together with the one awaited: one batch', async () => {
    const body = new PassThrough();
    const mapper = new TestMapper();
    const events = new SseMappedStream<string>(body, {
      mapper,
      isComplete: () => mapper.complete,
      wrapError: (error) => error as Error,
      release: () => body.destroy(),
    });
    const first = events.nextBatch();
    body.write('data: a\n\n');
    body.write('data: b\n\n');
    body.write('data: c\n\n');
    // b and c came in the same turn as a, which woke the reader: held, and mapped with it.
    expect(await first).toEqual(['a', 'b', 'c']);
    body.write('data: d\n\n');
    body.write('data: stop\n\n');
    // d and stop arrived while nobody asked: held, and taken in one go.
    await new Promise((resolve) => setImmediate(resolve));
    expect(await events.nextBatch()).toEqual(['d', 'stop']);
    body.end();
    expect(await events.nextBatch()).toEqual(['end']);
  });

  describe('with an undici body whose terminal event comes before its end', () => {
    let server: Server | undefined;
    let pool: Pool | undefined;
    afterEach(async () => {
      await pool?.close();
      await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
    });

    it('reads the rest, releases it as ended (no abort) and keeps the connection for the next request', async () => {
      let connections = 0;
      server = createServer((_request, response) => {
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.write('data: a\n\ndata: stop\n\n');
        // The body's end arrives after the terminal event, as a vendor's last chunk often does.
        setTimeout(() => response.end('\n'), 20);
      });
      server.on('connection', () => connections++);
      await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
      pool = new Pool(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { connections: 1 });
      for (let round = 0; round < 2; round++) {
        const response = await pool.request({ method: 'GET', path: '/' });
        const bodyErrors: unknown[] = [];
        response.body.on('error', (error) => bodyErrors.push(error));
        const mapper = new TestMapper();
        const released = new Promise<boolean>((resolve) => {
          const events = new SseMappedStream<string>(response.body, {
            mapper,
            isComplete: () => mapper.complete,
            wrapError: (error) => error as Error,
            release: () => resolve(response.body.readableEnded),
          });
          void collect(events).then((result) => expect(result).toEqual({ out: ['a', 'stop', 'end'] }));
        });
        expect(await released).toBe(true);
        expect(bodyErrors).toEqual([]);
      }
      expect(connections).toBe(1);
    });
  });
});
