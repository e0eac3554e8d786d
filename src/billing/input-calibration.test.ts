/**
 * The calibration of prompt estimates as properties: whatever the settled requests report, the ratio stays within
 * [1, 2]; it is the family's default until 20 usable samples, then their mean, then follows a steady vendor ratio
 * exactly; one outlier moves it by at most the average's weight; and a calibrated estimate never undercounts the
 * tokenizer. And where it is applied: admission's hold for an alpha model grows with the learned ratio.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  calibratedTokens,
  DEFAULT_FAMILY_RATIOS,
  EWMA_WEIGHT,
  InputCalibration,
  initialState,
  MAX_RATIO,
  MIN_RATIO,
  MIN_SAMPLE_TOKENS,
  observe,
  WARM_UP_SAMPLES,
} from './input-calibration.js';
import { boundedRawUsage, MAX_RAW_USAGE_CHARS } from './raw-usage.js';

const families = fc.constantFrom('alpha', 'beta', 'gamma', 'delta', 'unknown');
const samples = fc.array(
  fc.record({
    local: fc.integer({ min: 0, max: 2_000_000 }),
    vendor: fc.integer({ min: -5, max: 10_000_000 }),
  }),
  { maxLength: 200 },
);

describe('input calibration', () => {
  it('keeps the ratio within [1, 2] whatever is observed', () => {
    fc.assert(
      fc.property(families, samples, (family, observed) => {
        let state = initialState(family);
        for (const { local, vendor } of observed) {
          state = observe(state, local, vendor);
          expect(state.ratio).toBeGreaterThanOrEqual(MIN_RATIO);
          expect(state.ratio).toBeLessThanOrEqual(MAX_RATIO);
        }
      }),
    );
  });

  it("is the family's default until the warm-up is full, then the warm-up's mean, then follows a steady ratio", () => {
    fc.assert(
      fc.property(
        families,
        fc.array(fc.double({ min: 1, max: 2, noNaN: true }), {
          minLength: WARM_UP_SAMPLES,
          maxLength: WARM_UP_SAMPLES,
        }),
        fc.double({ min: 1, max: 2, noNaN: true }),
        (family, ratios, steady) => {
          const local = 10_000;
          let state = initialState(family);
          const start = state.ratio;
          expect(start).toBe(DEFAULT_FAMILY_RATIOS[family] ?? 1);
          // Too small to tell: ignored.
          state = observe(state, MIN_SAMPLE_TOKENS - 1, 10 * MIN_SAMPLE_TOKENS);
          expect(state.samples).toBe(0);
          const vendors = ratios.map((ratio) => Math.round(local * ratio));
          for (const [index, vendor] of vendors.entries()) {
            state = observe(state, local, vendor);
            if (index < WARM_UP_SAMPLES - 1) expect(state.ratio).toBe(start);
          }
          const mean = vendors.reduce((sum, vendor) => sum + vendor / local, 0) / WARM_UP_SAMPLES;
          expect(state.ratio).toBeCloseTo(mean, 9);
          for (let round = 0; round < 600; round++) state = observe(state, local, Math.round(local * steady));
          expect(state.ratio).toBeCloseTo(Math.round(local * steady) / local, 6);
        },
      ),
    );
  });

  it('moves by at most the weight of one sample on an outlier', () => {
    fc.assert(
      fc.property(fc.double({ min: 1, max: 2, noNaN: true }), fc.integer({ min: 1, max: 1_000 }), (ratio, factor) => {
        const warm = { ratio, samples: WARM_UP_SAMPLES, warmUpSum: 0 };
        const after = observe(warm, 1_000, 1_000 * factor);
        expect(Math.abs(after.ratio - ratio)).toBeLessThanOrEqual(EWMA_WEIGHT * (MAX_RATIO - MIN_RATIO) + 1e-12);
      }),
    );
  });

  it('never estimates fewer tokens than the tokenizer counted', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000_000 }), fc.double({ noNaN: false }), (local, ratio) => {
        const estimate = calibratedTokens(local, ratio);
        expect(estimate).toBeGreaterThanOrEqual(local);
        expect(estimate).toBeLessThanOrEqual(Math.ceil(local * MAX_RATIO));
      }),
    );
  });

  it('learns per model, each from its family default', () => {
    const calibration = new InputCalibration();
    expect(calibration.ratio('alpha-sonnet-5', 'alpha')).toBe(1.2);
    expect(calibration.ratio('gamma-2.5-pro', 'gamma')).toBe(1.15);
    for (let i = 0; i < WARM_UP_SAMPLES; i++) calibration.observe('alpha-sonnet-5', 'alpha', 1_000, 1_300);
    expect(calibration.ratio('alpha-sonnet-5', 'alpha')).toBeCloseTo(1.3, 12);
    expect(calibration.ratio('alpha-opus-4-8', 'alpha')).toBe(1.2);
  });
});

describe('raw vendor usage', () => {
  it('keeps a usage object as JSON, and replaces one past the bound with a marker', () => {
    expect(boundedRawUsage(null)).toBeNull();
    expect(boundedRawUsage({ input_tokens: 5 })).toBe('{"input_tokens":5}');
    const huge = { padding: 'x'.repeat(MAX_RAW_USAGE_CHARS) };
    expect(JSON.parse(boundedRawUsage(huge)!)).toEqual({
      tollgate_omitted: 'too large',
      chars: JSON.stringify(huge).length,
    });
  });
});
