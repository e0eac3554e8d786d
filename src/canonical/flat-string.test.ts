import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { ResponseAccumulator } from './accumulate.js';
import { flatCopy } from './flat-string.js';

describe('flatCopy', () => {
  it('gives the same text, whatever it was built from', () => {
    const chunk = `data: {"delta":{"content":" a delta longer than thirteen"}}\n\n`;
    let rope = '';
    for (let i = 0; i < 50; i++) rope += chunk.slice(27, 56);
    expect(flatCopy(rope)).toBe(rope);
    for (const text of ['', 'a', 'ab', 'é', '😀 emoji and é', 'x'.repeat(100_000)]) expect(flatCopy(text)).toBe(text);
  });
});

/** A full collection, then the heap in use (the flag made `gc` available to contexts made after it). */
function heapAfterFullCollection(): number {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
  return process.memoryUsage().heapUsed;
}

describe('flatCopy lets go of what the text was sliced from', () => {
  it('keeps a rope of slices of 16 MB of chunks in a few hundred KB once copied', () => {
    // 200 ropes of 20 deltas, each delta sliced out of its own 4 KB chunk, as a delta read by its learned shape is.
    const ropes: string[] = [];
    for (let r = 0; r < 200; r++) {
      let rope = '';
      for (let d = 0; d < 20; d++) {
        const chunk = `${r}:${d}:${'x'.repeat(4_000)}"a delta of some 25 chars"`;
        rope += chunk.slice(chunk.length - 25, chunk.length - 1);
      }
      ropes.push(rope);
    }
    const kept = heapAfterFullCollection();
    for (let r = 0; r < ropes.length; r++) ropes[r] = flatCopy(ropes[r]!);
    const compacted = heapAfterFullCollection();
    expect(kept - compacted).toBeGreaterThan(12_000_000);
    expect(ropes[7]).toBe('a delta of some 25 chars'.repeat(20));
  });
});

describe('ResponseAccumulator.compact', () => {
  it('keeps every block of every choice as it was folded, and folding goes on after it', () => {
    const accumulator = new ResponseAccumulator();
    accumulator.apply({ type: 'response-start', id: 'r', model: 'm', created: 1 });
    accumulator.apply({ type: 'reasoning-start', blockId: 'think' });
    accumulator.apply({ type: 'reasoning-delta', blockId: 'think', text: 'first, the plan; ' });
    accumulator.apply({ type: 'text-start', blockId: 'text-1' });
    accumulator.apply({ type: 'text-start', blockId: 'c1-text-1', choice: 1 });
    accumulator.apply({ type: 'tool-call-start', blockId: 'tool-0', id: 'call_0', name: 'lookup' });
    for (let i = 0; i < 20; i++) {
      accumulator.apply({ type: 'text-delta', blockId: 'text-1', text: ` word number ${i} of the reply` });
      accumulator.apply({ type: 'text-delta', blockId: 'c1-text-1', text: ` other ${i}` });
      accumulator.apply({ type: 'tool-call-delta', blockId: 'tool-0', argumentsDelta: `{"n":${i}}` });
    }
    const before = structuredClone(accumulator.response);
    accumulator.compact();
    expect(accumulator.response).toEqual(before);
    accumulator.apply({ type: 'text-delta', blockId: 'text-1', text: ' and the end.' });
    const text = accumulator.response.content.find((block) => block.type === 'text');
    expect(text?.type === 'text' && text.text.endsWith(' word number 19 of the reply and the end.')).toBe(true);
  });
});
