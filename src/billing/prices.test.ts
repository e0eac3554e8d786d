import { describe, expect, it } from 'vitest';
import { ModelCatalog } from '../catalog/model-catalog.js';
import { formatUsd, parseUsd } from './money.js';
import { costOfUsage, perTokenPrice, pricesFromPerMillion } from './prices.js';

describe('money', () => {
  it('parses and formats USD exactly, with no float on the way', () => {
    expect(parseUsd('12.5')).toBe(12_500_000_000n);
    expect(parseUsd('0.000000001')).toBe(1n);
    expect(parseUsd('0.1') + parseUsd('0.2')).toBe(parseUsd('0.3'));
    expect(formatUsd(12_500_000_000n)).toBe('12.5');
    expect(formatUsd(1n)).toBe('0.000000001');
    expect(formatUsd(-2_000_000_000n)).toBe('-2');
    for (const bad of ['1e3', '-1', '0.0000000001', 'abc', '']) expect(() => parseUsd(bad)).toThrow(RangeError);
  });
});

describe('prices', () => {
  it('turns USD per 1M tokens into exact nano-USD per token', () => {
    expect(perTokenPrice('0.14')).toBe(140n);
    expect(perTokenPrice('2.50')).toBe(2_500n);
    expect(perTokenPrice('0.275')).toBe(275n);
    expect(() => perTokenPrice('0.0000001')).toThrow(/not a whole number/);
  });

  it("prices the specification's four models exactly, as the service publishes them", () => {
    const catalog = new ModelCatalog();
    const oneMillionEach = {
      inputTokens: 1_000_000,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      cacheWrite1hTokens: 0,
      outputTokens: 1_000_000,
      reasoningTokens: 0,
    };
    const expected: Record<string, string> = {
      'alpha-sonnet-5': '18', // $3 in + $15 out
      'beta-5.4': '17.5', // $2.50 + $15
      'gamma-2.5-pro': '11', // $1 + $10
      'delta-v4-flash': '0.42', // $0.14 + $0.28
    };
    for (const [model, usd] of Object.entries(expected)) {
      expect(formatUsd(costOfUsage(oneMillionEach, catalog.resolve(model).prices))).toBe(usd);
    }
  });

  it('prices cache reads and writes at their own rates, falling back to the input price', () => {
    const prices = pricesFromPerMillion({ input: '3', output: '15', cacheRead: '0.30', cacheWrite: '3.75' });
    const usage = {
      inputTokens: 10,
      cacheReadTokens: 100,
      cacheWriteTokens: 20,
      cacheWrite1hTokens: 0,
      outputTokens: 5,
      reasoningTokens: 2,
    };
    expect(costOfUsage(usage, prices)).toBe(10n * 3_000n + 100n * 300n + 20n * 3_750n + 5n * 15_000n);
    expect(pricesFromPerMillion({ input: '1', output: '2' })).toEqual({
      input: 1_000n,
      output: 2_000n,
      cacheRead: 1_000n,
      cacheWrite: 1_000n,
      cacheWrite1h: 1_000n,
    });
  });

  it('applies configured price overrides field by field', () => {
    const catalog = new ModelCatalog({ 'beta-5.4': { prices: { output: '12' } } });
    expect(catalog.resolve('beta-5.4').prices).toMatchObject({ input: 2_500n, output: 12_000n });
  });
});
