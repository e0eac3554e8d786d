import { beforeAll, describe, expect, it } from 'vitest';
import { countTextTokens, loadTokenizer } from '../canonical/count-tokens.js';
import type { CanonicalEvent } from '../canonical/events.js';
import { gateOnHold, relayThrough, textDelta } from '../../test/helpers/gate-on-hold.js';
import { BYTE_SLICE_MULTIPLE, OpenBlocks } from './output-gate.js';

describe('OutputGate', () => {
  beforeAll(() => loadTokenizer());

  it('lets output within the grant pass synchronously, without asking for a slice', () => {
    const { gate, hold } = gateOnHold(100, 0);
    for (let i = 0; i < 20; i++) expect(gate.pass(textDelta(' word'))).toBe(true);
    expect(gate.pass({ type: 'finish', reason: 'stop', rawReason: 'stop' })).toBe(true);
    expect(hold.calls).toEqual([]);
    expect(gate.deliveredTokens()).toBe(20);
  });

  it('asks for one slice at a time, sized by bytes, as the output grows, never per chunk', async () => {
    const { gate, hold } = gateOnHold(100, 10_000);
    // 1,000 one-token chunks of 5 bytes: the 100 granted, then slices of 4 x 100 bytes (13 of them, where counting
    // exactly asked for 9 of 100 tokens).
    expect(
      await relayThrough(
        gate,
        Array.from({ length: 1_000 }, () => textDelta(' word')),
      ),
    ).toBe(1_000);
    expect(hold.calls).toEqual(Array(13).fill(BYTE_SLICE_MULTIPLE * 100));
    expect(gate.deliveredTokens()).toBe(1_000);
    expect(gate.unbilledTokens).toBe(0);
  });

  it('withholds the chunk the account cannot pay for: what was delivered stays within the grant, the chunk is the overrun', async () => {
    const { gate, hold } = gateOnHold(100, 150);
    const chunks = Array.from({ length: 100 }, () => textDelta(' one two three four five'));
    const delivered = await relayThrough(gate, chunks);
    // 250 tokens granted in all (a partial second slice), 5 tokens a chunk: 50 chunks out, the 51st refused.
    expect(delivered).toBe(50);
    expect(hold.granted).toBe(250);
    expect(gate.deliveredTokens()).toBe(250);
    expect(gate.unbilledTokens).toBe(countTextTokens(' one two three four five'));
    // The slice sized by bytes refused whole, then slices asked for by the exact count, as before bytes.
    expect(hold.calls).toEqual([400, 100, 100, 100]);
  });

  it('gives an account near its limit every token it can pay for, however little is left', async () => {
    // Prose of mixed scripts (ASCII ~4 bytes a token, accents and CJK fewer), each chunk a whole word: the exact
    // count of a prefix is the sum of its chunks' counts, so what the account can pay for is known chunk by chunk.
    const words = ' The café served 東京 tea, naïve prose and code: fn(x) => x * 2; überall 天気 fine.'.split(/(?= )/);
    const chunks = Array.from({ length: 6_000 }, (_, i) => words[i % words.length]!);
    const first = 2_048;
    for (const affordable of [0, 1, 37, 2_047, 2_048, 5_000, 9_999, 20_000]) {
      const { gate, hold } = gateOnHold(first, affordable, 100_000, 2_048);
      const delivered = await relayThrough(gate, chunks.map(textDelta));
      // The most chunks whose tokens the first slice and the affordable rest pay for: the cut of exact metering.
      let payable = 0;
      for (let tokens = 0; payable < chunks.length; payable++) {
        tokens += countTextTokens(chunks[payable]!);
        if (tokens > first + affordable) break;
      }
      expect(delivered, `affordable ${affordable}`).toBe(payable);
      expect(gate.deliveredTokens()).toBeLessThanOrEqual(hold.granted);
      expect(hold.granted).toBeLessThanOrEqual(first + affordable);
      expect(gate.unbilledTokens).toBe(payable < chunks.length ? countTextTokens(chunks[payable]!) : 0);
    }
  });

  it('asks for no slice beyond the request limit: the vendor stops there itself', async () => {
    const { gate, hold } = gateOnHold(100, 0, 100);
    expect(
      await relayThrough(
        gate,
        Array.from({ length: 150 }, () => textDelta(' word')),
      ),
    ).toBe(150);
    expect(hold.calls).toEqual([]);
  });

  it('counts tool calls and reasoning as output', async () => {
    const { gate, hold } = gateOnHold(3, 0);
    const events: CanonicalEvent[] = [
      { type: 'reasoning-delta', blockId: 'r', text: ' think' },
      { type: 'tool-call-start', blockId: 't', id: 'call_1', name: 'search' },
      { type: 'tool-call-delta', blockId: 't', argumentsDelta: '{"q":"x"}' },
    ];
    expect(await relayThrough(gate, events)).toBe(2);
    expect(hold.calls).toEqual([400, 100]);
    expect(gate.unbilledTokens).toBe(countTextTokens('{"q":"x"}'));
  });
});

describe('OpenBlocks', () => {
  it('closes what is open, in order, when a reply is cut', () => {
    const blocks = new OpenBlocks();
    for (const event of [
      { type: 'reasoning-start', blockId: 'r' },
      { type: 'reasoning-end', blockId: 'r' },
      { type: 'text-start', blockId: 'a' },
      { type: 'tool-call-start', blockId: 't', id: 'c', name: 'n' },
    ] as CanonicalEvent[]) {
      blocks.follow(event);
    }
    expect(blocks.ends()).toEqual([
      { type: 'text-end', blockId: 'a' },
      { type: 'tool-call-end', blockId: 't' },
    ]);
  });
});
