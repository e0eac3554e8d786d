import { beforeAll, describe, expect, it } from 'vitest';
import { ResponseAccumulator } from '../canonical/accumulate.js';
import { loadTokenizer } from '../canonical/count-tokens.js';
import type { CanonicalEvent } from '../canonical/events.js';
import { emptyUsage, type CanonicalUsage } from '../canonical/usage.js';
import { OutputGate } from './output-gate.js';
import { RelayedEvents, type Outcome } from './relayed-events.js';

const delta = (text: string): CanonicalEvent => ({ type: 'text-delta', blockId: 'b0', text });
const head: CanonicalEvent[] = [
  { type: 'response-start', id: 'r', model: 'm', created: 1 },
  { type: 'text-start', blockId: 'b0' },
];
const estimated: CanonicalUsage = { ...emptyUsage(), inputTokens: 3, outputTokens: 2 };

/** An upstream that gives `batches` one per `nextBatch()`, and the relay over it on a hold of `granted` tokens. */
function relayOf(batches: CanonicalEvent[][], granted: number, affordable: number) {
  const upstream = {
    closed: false,
    next: async (): Promise<IteratorResult<CanonicalEvent, undefined>> => ({ done: true, value: undefined }),
    nextBatch: async () => batches.shift(),
    return: async (): Promise<IteratorResult<CanonicalEvent, undefined>> => {
      upstream.closed = true;
      return { done: true, value: undefined };
    },
  };
  const hold = { granted, affordable };
  const gate = new OutputGate(
    () => hold.granted,
    100_000,
    100,
    async (tokens) => {
      const given = Math.min(tokens, hold.affordable);
      hold.affordable -= given;
      hold.granted += given;
      return given;
    },
  );
  const outcomes: Outcome[] = [];
  let firstOutput = 0;
  const relay = new RelayedEvents(upstream, new ResponseAccumulator(), gate, () => firstOutput++, {
    estimateUsage: async () => estimated,
    failed: () => 'upstream_error',
    finish: async (outcome) => {
      outcomes.push(outcome);
    },
  });
  return { relay, upstream, outcomes, firstOutput: () => firstOutput };
}

async function batchesOf(relay: RelayedEvents): Promise<(readonly CanonicalEvent[])[]> {
  const out: (readonly CanonicalEvent[])[] = [];
  for (let batch = await relay.nextBatch(); batch !== undefined; batch = await relay.nextBatch()) out.push(batch);
  return out;
}

describe('RelayedEvents in batches', () => {
  beforeAll(() => loadTokenizer());

  it('hands out each upstream batch whole, then the synthesised usage, then settles once', async () => {
    const { relay, outcomes, firstOutput } = relayOf(
      [[...head, delta('a')], [delta('b'), delta('c')], [{ type: 'text-end', blockId: 'b0' }]],
      1000,
      0,
    );
    const batches = await batchesOf(relay);
    expect(batches.map((batch) => batch.length)).toEqual([3, 2, 1, 1]);
    expect(batches[3]).toEqual([{ type: 'usage', usage: estimated }]);
    expect(outcomes).toEqual(['ok']);
    expect(firstOutput()).toBe(1);
  });

  it('hands each batch to the step it was asked for with, when the consumer changes its step', async () => {
    const { relay, outcomes } = relayOf([[...head, delta('a')], [delta('b')], [delta('c')], [delta('d')]], 1000, 0);
    const seen: string[] = [];
    const tagged = (tag: string) => (batch: readonly CanonicalEvent[] | undefined) => {
      seen.push(`${tag}:${batch?.map((event) => event.type).join(',') ?? 'over'}`);
      return batch;
    };
    const first = tagged('first');
    await relay.nextBatchThen(first);
    await relay.nextBatchThen(first);
    await relay.nextBatchThen(tagged('second'));
    seen.push(`plain:${(await relay.nextBatch())?.length}`);
    await relay.nextBatchThen(first);
    await relay.nextBatchThen(first);
    expect(seen).toEqual([
      'first:response-start,text-start,text-delta',
      'first:text-delta',
      'second:text-delta',
      'plain:1',
      'first:usage',
      'first:over',
    ]);
    expect(outcomes).toEqual(['ok']);
  });

  it('cuts a batch at the event whose slice is refused: what passed before it, then the length stop', async () => {
    const { relay, upstream, outcomes } = relayOf(
      [
        [...head, delta('hi')],
        [delta('abc'), delta(' and a long run of words well past the hold'), delta('never')],
      ],
      4,
      0,
    );
    const batches = await batchesOf(relay);
    expect(batches).toHaveLength(2);
    expect(batches[1]).toEqual([
      delta('abc'),
      { type: 'text-end', blockId: 'b0' },
      { type: 'usage', usage: estimated },
      { type: 'finish', reason: 'length', rawReason: null },
    ]);
    expect(upstream.closed).toBe(true);
    expect(outcomes).toEqual(['slice_refused']);
  });

  it('gives the same events one by one through next(), mixed with batches', async () => {
    const { relay, outcomes } = relayOf([[...head, delta('a')], [delta('b')]], 1000, 0);
    expect(await relay.next()).toEqual({ done: false, value: head[0] });
    expect(await relay.nextBatch()).toEqual([head[1], delta('a')]);
    expect(await relay.next()).toEqual({ done: false, value: delta('b') });
    expect(await relay.next()).toEqual({ done: false, value: { type: 'usage', usage: estimated } });
    expect(await relay.next()).toEqual({ done: true, value: undefined });
    expect(outcomes).toEqual(['ok']);
  });

  it('settles as disconnected, once, when the consumer leaves between batches', async () => {
    const { relay, upstream, outcomes } = relayOf([[...head, delta('a')], [delta('b')]], 1000, 0);
    await relay.nextBatch();
    await relay.return();
    await relay.return();
    expect(upstream.closed).toBe(true);
    expect(outcomes).toEqual(['client_disconnected']);
  });
});
