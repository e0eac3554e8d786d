/**
 * The reconcile's rule as properties: whatever a rule-following settlement split (any usage, prices, allowance, money
 * limits, server-tool fee, overrun), reading it back from its record and ledger line flags nothing and gives
 * free + billed + unbilled = reported per kind, with the settlement's own per-kind parts; a record that disagrees with
 * its ledger line is flagged. And the range options: defaults, bad days, `from` after `to`.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { CanonicalUsage } from '../canonical/usage.js';
import type { ReconcileRecord } from '../storage/types.js';
import { REPORT_KINDS, reconcileRange, reconcileRequest, ReconcileRangeError } from './ledger-reconcile.js';
import type { ModelPrices } from './prices.js';
import { splitUsage, TOKEN_KINDS } from './usage-split.js';

const tokens = fc.integer({ min: 0, max: 2_000_000 });
const price = fc.bigInt({ min: 0n, max: 100_000n });
const usages = fc
  .record({
    inputTokens: tokens,
    cacheReadTokens: tokens,
    cacheWriteTokens: tokens,
    oneHourShare: fc.double({ min: 0, max: 1, noNaN: true }),
    outputTokens: tokens,
  })
  .map(
    ({ oneHourShare, ...counts }): CanonicalUsage => ({
      ...counts,
      cacheWrite1hTokens: Math.floor(counts.cacheWriteTokens * oneHourShare),
      reasoningTokens: 0,
    }),
  );
const pricesArbitrary = fc.record<ModelPrices>({
  input: price,
  output: price,
  cacheRead: price,
  cacheWrite: price,
  cacheWrite1h: price,
});
const rooms = fc.record({
  freeTokens: fc.integer({ min: 0, max: 3_000_000 }),
  moneyNano: fc.array(fc.bigInt({ min: -1_000_000n, max: 100_000_000_000n }), { minLength: 1, maxLength: 3 }),
});

/** A settlement as storage writes it: the record (with any overrun) and the ledger line when one is due. */
function settled(
  usage: CanonicalUsage,
  prices: ModelPrices,
  room: typeof rooms extends fc.Arbitrary<infer R> ? R : never,
  fee: bigint,
  overrun: number,
) {
  const split = splitUsage(usage, prices, room, fee === 0n ? [] : [fee]);
  const record: ReconcileRecord = {
    requestId: 'r1',
    accountId: 'a1',
    model: 'm',
    createdAt: 0,
    ...usage,
    freeTokens: split.freeTokens,
    unbilledTokens: split.unbilledTokens + overrun,
    costNano: split.billedNano,
    unbilledNano: split.unbilledNano,
    serverToolNano: fee,
    ledger:
      split.billedNano > 0n || split.unbilledNano > 0n || split.unbilledTokens > 0
        ? { amountNano: -split.billedNano, unbilledTokens: split.unbilledTokens, unbilledNano: split.unbilledNano }
        : null,
  };
  return { split, record };
}

describe('reconciling one request', () => {
  it('flags nothing for a rule-following settlement and gives back its per-kind parts, priced or not', () => {
    fc.assert(
      fc.property(
        usages,
        pricesArbitrary,
        rooms,
        fc.bigInt({ min: 0n, max: 1_000_000n }),
        fc.integer({ min: 0, max: 500 }),
        (usage, prices, room, fee, overrun) => {
          const { split, record } = settled(usage, prices, room, fee, overrun);
          const parts = reconcileRequest(record, prices);
          expect(parts.reasons).toEqual([]);
          expect(parts.overrunOutputTokens).toBe(overrun);
          const expected = { input: [0, 0, 0], cacheRead: [0, 0, 0], cacheWrite: [0, 0, 0], output: [0, 0, 0] };
          for (const kind of TOKEN_KINDS) {
            const target = expected[kind === 'cacheWrite5m' || kind === 'cacheWrite1h' ? 'cacheWrite' : kind];
            target[0]! += split.kinds[kind].free;
            target[1]! += split.kinds[kind].billed;
            target[2]! += split.kinds[kind].unbilled;
          }
          for (const kind of REPORT_KINDS) {
            expect([parts.free[kind], parts.billed[kind], parts.unbilled[kind]]).toEqual(expected[kind]);
            expect(parts.free[kind] + parts.billed[kind] + parts.unbilled[kind]).toBe(parts.reported[kind]);
          }
          // Without prices (a model gone from the catalog): still nothing flagged, and the parts still add up.
          const unpriced = reconcileRequest(record, undefined);
          expect(unpriced.reasons).toEqual([]);
          for (const kind of REPORT_KINDS)
            expect(unpriced.free[kind] + unpriced.billed[kind] + unpriced.unbilled[kind]).toBe(unpriced.reported[kind]);
        },
      ),
      { numRuns: 500 },
    );
  });

  it("flags a charge that is not the rule's, a ledger line that disagrees, and negative counts", () => {
    const prices: ModelPrices = { input: 2n, output: 10n, cacheRead: 1n, cacheWrite: 3n, cacheWrite1h: 4n };
    const usage: CanonicalUsage = {
      inputTokens: 100,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      cacheWrite1hTokens: 0,
      outputTokens: 50,
      reasoningTokens: 0,
    };
    const { record } = settled(usage, prices, { freeTokens: 0, moneyNano: [10_000n] }, 0n, 0);
    expect(reconcileRequest(record, prices).reasons).toEqual([]);
    // Charged one nano more than the rule gives, ledger in step: the replay catches it.
    const overcharged = {
      ...record,
      costNano: record.costNano + 1n,
      ledger: { ...record.ledger!, amountNano: -record.costNano - 1n },
    };
    expect(reconcileRequest(overcharged, prices).reasons).toEqual(['split_mismatch']);
    expect(reconcileRequest({ ...record, ledger: { ...record.ledger!, unbilledNano: 5n } }, prices).reasons).toEqual([
      'ledger_unbilled_mismatch',
    ]);
    expect(reconcileRequest({ ...record, outputTokens: -1 }, prices).reasons).toContain('negative_value');
  });
});

describe('the reconcile range', () => {
  const now = Date.parse('2026-03-10T15:00:00Z');

  it('defaults to the 7 UTC days ending today, or ending at --to', () => {
    expect(reconcileRange(undefined, undefined, now)).toEqual({ from: '2026-03-04', to: '2026-03-10' });
    expect(reconcileRange(undefined, '2026-03-01', now)).toEqual({ from: '2026-02-23', to: '2026-03-01' });
    expect(reconcileRange('2026-03-09', undefined, now)).toEqual({ from: '2026-03-09', to: '2026-03-10' });
    expect(reconcileRange('2026-03-09', '2026-03-09', now)).toEqual({ from: '2026-03-09', to: '2026-03-09' });
  });

  it('refuses days that are not real dates, and from after to', () => {
    for (const [from, to, field] of [
      ['2026-02-30', undefined, 'from'],
      ['yesterday', undefined, 'from'],
      [undefined, '2026-3-01', 'to'],
      ['2026-03-05', '2026-03-04', 'from'],
    ] as const) {
      const refused = (() => {
        try {
          reconcileRange(from, to, now);
        } catch (error) {
          return error;
        }
        return undefined;
      })();
      expect(refused).toBeInstanceOf(ReconcileRangeError);
      expect((refused as ReconcileRangeError).field).toBe(field);
    }
  });
});
