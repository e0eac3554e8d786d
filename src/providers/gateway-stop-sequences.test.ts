import { describe, expect, it } from 'vitest';
import { ResponseAccumulator } from '../canonical/accumulate.js';
import type { CanonicalEvent } from '../canonical/events.js';
import { nextBatchThen, type BatchStep } from '../streaming/event-batches.js';
import { matchStopSequences, StopSequenceMatcher } from './gateway-stop-sequences.js';

const start: CanonicalEvent = { type: 'response-start', id: 'r', model: 'm', created: 1 };
const usage: CanonicalEvent = {
  type: 'usage',
  usage: {
    inputTokens: 5,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    cacheWrite1hTokens: 0,
    outputTokens: 9,
    reasoningTokens: 0,
  },
};

function textReply(pieces: string[]): CanonicalEvent[] {
  return [
    start,
    { type: 'text-start', blockId: 't' },
    ...pieces.map((text): CanonicalEvent => ({ type: 'text-delta', blockId: 't', text })),
    { type: 'text-end', blockId: 't' },
    { type: 'finish', reason: 'stop', rawReason: 'stop' },
    usage,
  ];
}

function run(events: CanonicalEvent[], stops: string[]): CanonicalEvent[] {
  const matcher = new StopSequenceMatcher(stops);
  return events.flatMap((event) => matcher.push(event));
}

function fold(events: CanonicalEvent[]) {
  const accumulator = new ResponseAccumulator();
  for (const event of events) accumulator.apply(event);
  return accumulator.response;
}

describe('StopSequenceMatcher', () => {
  it('cuts at a sequence split across deltas, reports it, and ends the reply there', () => {
    const out = run(textReply(['The answer is 4', '2. EN', 'D and more text', ' after it']), ['END']);
    const reply = fold(out);
    expect(reply.content).toEqual([{ type: 'text', text: 'The answer is 42. ' }]);
    expect(reply.finishReason).toBe('stop-sequence');
    expect(reply.stopSequence).toBe('END');
    // The vendor's own finish and usage never come through: the reply ended at the match.
    expect(out.filter((event) => event.type === 'finish')).toHaveLength(1);
    expect(reply.usageReported).toBe(false);
    expect(out.at(-1)).toEqual({
      type: 'finish',
      reason: 'stop-sequence',
      rawReason: 'stop_sequence',
      stopSequence: 'END',
    });
  });

  it('reports the earliest match, and the longest of sequences matching at one place', () => {
    expect(fold(run(textReply(['abc STOP here, END there']), ['END', 'STOP'])).stopSequence).toBe('STOP');
    const reply = fold(run(textReply(['x ## y']), ['#', '##']));
    expect(reply.stopSequence).toBe('##');
    expect(reply.content).toEqual([{ type: 'text', text: 'x ' }]);
  });

  it('passes a reply without a match through whole, text in order, finish and usage kept', () => {
    const events = textReply(['no ', 'stop sequence ', 'E', 'N']);
    const out = run(events, ['END']);
    const reply = fold(out);
    expect(reply.content).toEqual([{ type: 'text', text: 'no stop sequence EN' }]);
    expect(reply.finishReason).toBe('stop');
    expect(reply.stopSequence).toBeNull();
    expect(out.at(-1)).toEqual(usage);
    // Held-back text goes out before the block ends.
    expect(out.findIndex((event) => event.type === 'text-end')).toBeGreaterThan(
      out.findLastIndex((event) => event.type === 'text-delta'),
    );
  });

  it('holds back only what could still begin a match, never splitting a surrogate pair', () => {
    const matcher = new StopSequenceMatcher(['STOP']);
    matcher.push(start);
    const first = matcher.push({ type: 'text-delta', blockId: 't', text: 'hello wor' });
    expect(first).toEqual([{ type: 'text-delta', blockId: 't', text: 'hello ' }]);
    const emoji = matcher.push({ type: 'text-delta', blockId: 't', text: 'ld 😀 ' });
    const passed = emoji.map((event) => (event.type === 'text-delta' ? event.text : '')).join('');
    expect(passed).toBe('world ');
  });

  it('matches text only: reasoning and tool arguments holding the sequence do not stop the reply', () => {
    const events: CanonicalEvent[] = [
      start,
      { type: 'reasoning-start', blockId: 'r' },
      { type: 'reasoning-delta', blockId: 'r', text: 'I will say END' },
      { type: 'reasoning-end', blockId: 'r' },
      { type: 'tool-call-start', blockId: 'c', id: 'call_1', name: 'f' },
      { type: 'tool-call-delta', blockId: 'c', argumentsDelta: '{"a":"END"}' },
      { type: 'tool-call-end', blockId: 'c' },
      { type: 'finish', reason: 'tool-calls', rawReason: 'tool_calls' },
    ];
    expect(run(events, ['END'])).toEqual(events);
  });
});

describe('matchStopSequences', () => {
  it('closes the upstream iterator at the match, so the vendor request is abandoned', async () => {
    let closed = false;
    let pulled = 0;
    const events = textReply(['one two ', 'STOP three', ' four']);
    const upstream: AsyncIterable<CanonicalEvent> = {
      [Symbol.asyncIterator]() {
        return {
          next: async () =>
            pulled < events.length ? { done: false, value: events[pulled++]! } : { done: true, value: undefined },
          return: async () => {
            closed = true;
            return { done: true, value: undefined };
          },
        };
      },
    };
    const out: CanonicalEvent[] = [];
    for await (const event of matchStopSequences(upstream, ['STOP'])) out.push(event);
    expect(closed).toBe(true);
    expect(pulled).toBe(4);
    expect(fold(out).content).toEqual([{ type: 'text', text: 'one two ' }]);
    expect(fold(out).stopSequence).toBe('STOP');
  });

  it('cuts a batched upstream at the match: the events before it in one batch, the upstream closed', async () => {
    let closed = false;
    const events = textReply(['one two ', 'STOP three', ' four']);
    // The first batch ends mid-way through the text deltas; the second holds the match and what follows.
    const batches = [events.slice(0, 3), events.slice(3)];
    const upstream = {
      next: async () => ({ done: true as const, value: undefined }),
      nextBatch: async () => batches.shift(),
      return: async () => {
        closed = true;
        return { done: true as const, value: undefined };
      },
      [Symbol.asyncIterator]() {
        return this;
      },
    };
    const matched = matchStopSequences(upstream, ['STOP']) as AsyncIterableIterator<CanonicalEvent> & {
      nextBatch(): Promise<readonly CanonicalEvent[] | undefined>;
    };
    const out: CanonicalEvent[] = [];
    for (let batch = await matched.nextBatch(); batch !== undefined; batch = await matched.nextBatch()) {
      expect(batch.length).toBeGreaterThan(0);
      out.push(...batch);
    }
    expect(closed).toBe(true);
    expect(fold(out).content).toEqual([{ type: 'text', text: 'one two ' }]);
    expect(fold(out).stopSequence).toBe('STOP');
  });

  it('hands its batches on in the callback that made the upstream batch, held-back text and the match as nextBatch does', async () => {
    let closed = false;
    let inUpstreamCallback = false;
    const events = textReply(['one ', 'S', 'TOP three', ' four']);
    // One event per batch (each chunk alone, as in the timed bench): 'S' is held back whole (it may begin 'STOP').
    const batches = events.map((event) => [event]);
    const upstream = {
      next: async () => ({ done: true as const, value: undefined }),
      nextBatch: async () => batches.shift(),
      // The step runs inside this call, as SseMappedStream runs it inside the chunk's callback.
      nextBatchThen: <U>(step: BatchStep<CanonicalEvent, U>) =>
        Promise.resolve().then(() => {
          inUpstreamCallback = true;
          try {
            return step(batches.shift());
          } finally {
            inUpstreamCallback = false;
          }
        }),
      return: async () => {
        closed = true;
        return { done: true as const, value: undefined };
      },
      [Symbol.asyncIterator]() {
        return this;
      },
    };
    const matched = matchStopSequences(upstream, ['STOP']);
    const out: CanonicalEvent[] = [];
    const stepsInCallback: boolean[] = [];
    const step = (batch: readonly CanonicalEvent[] | undefined) => {
      stepsInCallback.push(inUpstreamCallback);
      if (batch !== undefined) {
        expect(batch.length).toBeGreaterThan(0);
        out.push(...batch);
      }
      return batch === undefined;
    };
    while (!(await nextBatchThen(matched, step))) {
      // read on
    }
    expect(closed).toBe(true);
    expect(fold(out).content).toEqual([{ type: 'text', text: 'one ' }]);
    expect(fold(out).stopSequence).toBe('STOP');
    // response-start, text-start and 'one ' each went on in the upstream's callback; the match waits for the close.
    expect(stepsInCallback.slice(0, 3)).toEqual([true, true, true]);
    expect(stepsInCallback.at(-2)).toBe(false);
  });

  it('gives an upstream failure to onError, as nextBatch rejects', async () => {
    const upstream = {
      next: async () => ({ done: true as const, value: undefined }),
      nextBatch: async (): Promise<readonly CanonicalEvent[] | undefined> => {
        throw new Error('cut off');
      },
      [Symbol.asyncIterator]() {
        return this;
      },
    };
    const matched = matchStopSequences(upstream, ['STOP']);
    await expect(
      nextBatchThen(
        matched,
        () => 'stepped',
        (error) => `failed: ${(error as Error).message}`,
      ),
    ).resolves.toBe('failed: cut off');
  });
});
