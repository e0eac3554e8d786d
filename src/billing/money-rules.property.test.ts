/**
 * The money rules as properties over random usages, prices, allowances, balances and limits: whatever the vendor
 * reports, free + billed + unbilled = reported per token kind, the charge fits every money limit, nothing is
 * negative; holds and slices never take more than the account (or its key) has.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { CanonicalUsage } from '../canonical/usage.js';
import type { AdmissionState } from '../storage/billing-types.js';
import { planAdmission } from './admission.js';
import type { ModelPrices } from './prices.js';
import { costOfUsage } from './prices.js';
import { planSliceGrant } from './slice-grant.js';
import { priceOfKind, splitUsage, TOKEN_KINDS, tokensByKind } from './usage-split.js';

const tokens = fc.integer({ min: 0, max: 2_000_000 });
const price = fc.bigInt({ min: 0n, max: 100_000n });
const money = fc.bigInt({ min: -1_000_000_000n, max: 100_000_000_000n });

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
  moneyNano: fc.array(money, { minLength: 1, maxLength: 3 }),
});

describe('the usage split', () => {
  it('free + billed + unbilled = reported per kind; the charge fits every limit; money adds up', () => {
    fc.assert(
      fc.property(
        usages,
        pricesArbitrary,
        rooms,
        fc.array(fc.bigInt({ min: 0n, max: 1_000_000n }), { maxLength: 2 }),
        (usage, prices, room, fees) => {
          const split = splitUsage(usage, prices, room, fees);
          const reported = tokensByKind(usage);
          let free = 0;
          let billedNano = 0n;
          let unbilledTokens = 0;
          let unbilledNano = 0n;
          for (const kind of TOKEN_KINDS) {
            const part = split.kinds[kind];
            expect(part.free + part.billed + part.unbilled).toBe(reported[kind]);
            expect(Math.min(part.free, part.billed, part.unbilled)).toBeGreaterThanOrEqual(0);
            free += part.free;
            billedNano += BigInt(part.billed) * priceOfKind(prices, kind);
            unbilledTokens += part.unbilled;
            unbilledNano += BigInt(part.unbilled) * priceOfKind(prices, kind);
          }
          const feeTotal = fees.reduce((sum, fee) => sum + fee, 0n);
          expect(split.freeTokens).toBe(free);
          expect(split.unbilledTokens).toBe(unbilledTokens);
          expect(split.billedNano - billedNano + split.unbilledNano - unbilledNano).toBe(feeTotal);
          expect(split.billedNano + split.unbilledNano).toBe(
            costOfUsage(usage, prices) - freeCost(split, prices) + feeTotal,
          );
          expect(split.billedNano).toBeGreaterThanOrEqual(0n);
          expect(split.unbilledNano).toBeGreaterThanOrEqual(0n);
          for (const limit of room.moneyNano) expect(split.billedNano <= (limit > 0n ? limit : 0n)).toBe(true);
          // Free first, up to what the request may take: only tokens beyond the free room are ever charged.
          expect(split.freeTokens).toBe(Math.min(room.freeTokens, sum(reported)));
        },
      ),
    );
  });

  it('nothing is left unbilled while a limit has room for the next token', () => {
    fc.assert(
      fc.property(usages, pricesArbitrary, rooms, (usage, prices, room) => {
        const split = splitUsage(usage, prices, room);
        const lowest = room.moneyNano.reduce((low, limit) => (limit < low ? limit : low));
        const left = (lowest > 0n ? lowest : 0n) - split.billedNano;
        for (const kind of TOKEN_KINDS) {
          if (split.kinds[kind].unbilled > 0) expect(left < priceOfKind(prices, kind)).toBe(true);
        }
      }),
    );
  });

  it("a vendor's bad figures never throw and never price below zero", () => {
    const bad = fc.oneof(
      fc.constant(-5),
      fc.constant(1.5),
      fc.constant(Number.NaN),
      fc.constant(Number.POSITIVE_INFINITY),
      tokens,
    );
    fc.assert(
      fc.property(bad, bad, bad, bad, pricesArbitrary, rooms, (input, read, write, output, prices, room) => {
        const usage = {
          inputTokens: input,
          cacheReadTokens: read,
          cacheWriteTokens: write,
          cacheWrite1hTokens: read,
          outputTokens: output,
          reasoningTokens: 0,
        };
        const split = splitUsage(usage, prices, room);
        expect(split.billedNano).toBeGreaterThanOrEqual(0n);
        expect(split.unbilledNano).toBeGreaterThanOrEqual(0n);
      }),
    );
  });
});

const states = fc.record<AdmissionState>({
  availableNano: money,
  freeTokensLeft: fc.integer({ min: 0, max: 100_000 }),
});

describe('admission and slices', () => {
  it('an admitted hold never exceeds what is available, nor its free tokens what is left', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1_000_000 }),
        fc.option(fc.integer({ min: 1, max: 128_000 }), { nil: undefined }),
        fc.integer({ min: 1, max: 4_096 }),
        pricesArbitrary,
        states,
        (inputTokens, clientMax, slice, prices, state) => {
          const plan = planAdmission(
            {
              inputTokens,
              clientMaxOutputTokens: clientMax,
              modelMaxOutputTokens: 128_000,
              firstSliceTokens: slice,
              prices,
            },
            state,
          );
          if (!plan.admitted) return;
          expect(plan.holdNano >= 0n && plan.holdNano <= state.availableNano).toBe(true);
          expect(plan.freeTokens).toBeLessThanOrEqual(state.freeTokensLeft);
          expect(plan.maxOutputTokens).toBeGreaterThanOrEqual(1);
        },
      ),
    );
  });

  it("with fewer free tokens than planned, the free tokens' prices give the hold the planner gives with those left", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1_000_000 }),
        fc.integer({ min: 1, max: 4_096 }),
        pricesArbitrary,
        states,
        fc.double({ min: 0, max: 1, noNaN: true }),
        (inputTokens, slice, prices, state, share) => {
          const request = {
            inputTokens,
            clientMaxOutputTokens: undefined,
            modelMaxOutputTokens: 128_000,
            firstSliceTokens: slice,
            prices,
          };
          const plan = planAdmission(request, state);
          if (!plan.admitted || plan.freeTokens === 0) return;
          const { outputTokens, outputNano, inputNano } = plan.freeTokenPrices!;
          const left = Math.floor(plan.freeTokens * share) % plan.freeTokens;
          const missing = plan.freeTokens - left;
          const missingOutput = Math.min(missing, outputTokens);
          const hold = plan.holdNano + BigInt(missingOutput) * outputNano + BigInt(missing - missingOutput) * inputNano;
          if (hold > state.availableNano) return;
          expect(planAdmission(request, { ...state, freeTokensLeft: left })).toMatchObject({
            admitted: true,
            holdNano: hold,
            freeTokens: left,
            maxOutputTokens: plan.maxOutputTokens,
          });
        },
      ),
    );
  });

  it('a granted slice takes free tokens first and never more money than is available', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000 }), price, states, (wanted, outputPrice, state) => {
        const plan = planSliceGrant(wanted, outputPrice, state);
        if (!plan.granted) {
          expect(Math.min(wanted, state.freeTokensLeft) === 0 || wanted === 0).toBe(true);
          return;
        }
        expect(plan.tokens).toBeLessThanOrEqual(wanted);
        expect(plan.freeTokens).toBe(Math.min(wanted, state.freeTokensLeft));
        expect(plan.holdNano).toBe(BigInt(plan.tokens - plan.freeTokens) * outputPrice);
        expect(plan.holdNano <= (state.availableNano > 0n ? state.availableNano : 0n)).toBe(true);
      }),
    );
  });

  it('a whole slice is the slice asked for when all of it is there, refused otherwise', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000 }), price, states, (wanted, outputPrice, state) => {
        const partial = planSliceGrant(wanted, outputPrice, state);
        const whole = planSliceGrant(wanted, outputPrice, state, true);
        if (partial.granted && partial.tokens === wanted) expect(whole).toEqual(partial);
        else expect(whole.granted).toBe(false);
      }),
    );
  });
});

function sum(counts: Record<string, number>): number {
  return Object.values(counts).reduce((total, count) => total + count, 0);
}

function freeCost(split: ReturnType<typeof splitUsage>, prices: ModelPrices): bigint {
  let cost = 0n;
  for (const kind of TOKEN_KINDS) cost += BigInt(split.kinds[kind].free) * priceOfKind(prices, kind);
  return cost;
}
