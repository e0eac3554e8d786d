import { beforeAll, describe, expect, it } from 'vitest';
import { countTextTokens, loadTokenizer } from '../canonical/count-tokens.js';
import type { CanonicalEvent } from '../canonical/events.js';
import { OpenBlocks, OutputGate } from './output-gate.js';

const delta = (text: string): CanonicalEvent => ({ type: 'text-delta', blockId: 'b0', text });

/** A gate on a hold of `granted` output tokens whose account has `affordable` more to grant. */
function gateWith(granted: number, affordable: number, limit = 100_000, slice = 100) {
  const hold = { granted, affordable, calls: [] as number[] };
  const gate = new OutputGate(
    () => hold.granted,
    limit,
    slice,
    async (tokens) => {
      hold.calls.push(tokens);
      const given = Math.min(tokens, hold.affordable);
      hold.affordable -= given;
      hold.granted += given;
      return given;
    },
  );
  return { gate, hold };
}

/** Passes events through the gate as the relay does; returns how many went out before one was refused. */
async function run(gate: OutputGate, events: readonly CanonicalEvent[]): Promise<number> {
  let delivered = 0;
  for (const event of events) {
    const pass = gate.pass(event);
    if (pass !== true && !(await pass)) break;
    delivered += 1;
  }
  return delivered;
}

describe('OutputGate', () => {
  beforeAll(() => loadTokenizer());

  it('lets output within the grant pass synchronously, without asking for a slice', () => {
    const { gate, hold } = gateWith(100, 0);
    for (let i = 0; i < 20; i++) expect(gate.pass(delta(' word'))).toBe(true);
    expect(gate.pass({ type: 'finish', reason: 'stop', rawReason: 'stop' })).toBe(true);
    expect(hold.calls).toEqual([]);
    expect(gate.deliveredTokens()).toBe(20);
  });

  it('asks for one slice at a time as the output grows, never per chunk', async () => {
    const { gate, hold } = gateWith(100, 10_000);
    // 1,000 one-token chunks: the 100 granted, then 9 slices of 100.
    expect(
      await run(
        gate,
        Array.from({ length: 1_000 }, () => delta(' word')),
      ),
    ).toBe(1_000);
    expect(hold.calls).toEqual(Array(9).fill(100));
    expect(gate.deliveredTokens()).toBe(1_000);
    expect(gate.unbilledTokens).toBe(0);
  });

  it('withholds the chunk the account cannot pay for: what was delivered stays within the grant, the chunk is the overrun', async () => {
    const { gate, hold } = gateWith(100, 150);
    const chunks = Array.from({ length: 100 }, () => delta(' one two three four five'));
    const delivered = await run(gate, chunks);
    // 250 tokens granted in all (a partial second slice), 5 tokens a chunk: 50 chunks out, the 51st refused.
    expect(delivered).toBe(50);
    expect(hold.granted).toBe(250);
    expect(gate.deliveredTokens()).toBe(250);
    expect(gate.unbilledTokens).toBe(countTextTokens(' one two three four five'));
    expect(hold.calls).toEqual([100, 100, 100]);
  });

  it('asks for no slice beyond the request limit: the vendor stops there itself', async () => {
    const { gate, hold } = gateWith(100, 0, 100);
    expect(
      await run(
        gate,
        Array.from({ length: 150 }, () => delta(' word')),
      ),
    ).toBe(150);
    expect(hold.calls).toEqual([]);
  });

  it('counts tool calls and reasoning as output', async () => {
    const { gate, hold } = gateWith(3, 0);
    const events: CanonicalEvent[] = [
      { type: 'reasoning-delta', blockId: 'r', text: ' think' },
      { type: 'tool-call-start', blockId: 't', id: 'call_1', name: 'search' },
      { type: 'tool-call-delta', blockId: 't', argumentsDelta: '{"q":"x"}' },
    ];
    expect(await run(gate, events)).toBe(2);
    expect(hold.calls).toEqual([100]);
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
