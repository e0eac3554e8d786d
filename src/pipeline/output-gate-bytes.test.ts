/**
 * The gate meters by bytes between slices: a long reply of an account that can pay never loads the tokenizer.
 * Its own file, so that no other test has loaded the tokenizer first.
 */
import { describe, expect, it } from 'vitest';
import { countTextTokens, tokenizerLoaded } from '../canonical/count-tokens.js';
import { gateOnHold, relayThrough, textDelta } from '../../test/helpers/gate-on-hold.js';
import { BYTE_SLICE_MULTIPLE } from './output-gate.js';

describe('OutputGate on a funded account', () => {
  it('meters a 2,000-chunk reply by bytes: a few slices, no tokenizer until the final count', async () => {
    // The bench's long stream: " word1" … " word1999" after an opening, 2,048 tokens granted at admission.
    const chunks = ['Reply n0:', ...Array.from({ length: 1_999 }, (_, i) => ` word${i + 1}`)];
    const text = chunks.join('');
    const bytes = Buffer.byteLength(text);
    const slice = 2_048;
    const { gate, hold } = gateOnHold(slice, 1_000_000_000, 128_000, slice);

    expect(await relayThrough(gate, chunks.map(textDelta))).toBe(2_000);
    expect(tokenizerLoaded()).toBe(false);
    expect(gate.lastCount()).toBeUndefined();
    // One slice of 4 x 2,048 per 8,192 bytes past the first slice.
    const byteSlice = BYTE_SLICE_MULTIPLE * slice;
    expect(hold.calls).toEqual(Array(Math.ceil((bytes - slice) / byteSlice)).fill(byteSlice));
    expect(hold.granted).toBeGreaterThanOrEqual(bytes);

    // A cut stream's count stays exact: the tokenizer, over everything delivered.
    expect(gate.deliveredTokens()).toBe(countTextTokens(text));
    expect(tokenizerLoaded()).toBe(true);
    expect(gate.deliveredTokens()).toBeLessThan(bytes);
  });
});
