import { describe, expect, it } from 'vitest';
import { niceTicks } from './chart-ticks';
import {
  axisUsdFormatter,
  formatCost,
  formatUsd,
  formatUsdCents,
  fromNano,
  isCentsAmount,
  sumUsd,
  toNano,
} from './money';

describe('dashboard money formatting (exact, no floats)', () => {
  it('parses decimal USD strings into nano-USD exactly', () => {
    expect(toNano('12.5')).toBe(12_500_000_000n);
    expect(toNano('0.000000001')).toBe(1n);
    expect(toNano('-3')).toBe(-3_000_000_000n);
    expect(toNano('.5')).toBe(500_000_000n);
    // Beyond float precision: 2^53 + 1 dollars stays exact.
    expect(toNano('9007199254740993.000000001')).toBe(9_007_199_254_740_993_000_000_001n);
    expect(() => toNano('1e3')).toThrow();
    expect(() => toNano('')).toThrow();
  });

  it('shows summaries to the cent, rounded half away from zero, never a misleading $0.00', () => {
    expect(formatUsdCents('4.98984')).toBe('$4.99');
    expect(formatUsdCents('4.984999999')).toBe('$4.98');
    expect(formatUsdCents('4.985')).toBe('$4.99');
    expect(formatUsdCents('1234.565')).toBe('$1,234.57');
    expect(formatUsdCents('0')).toBe('$0.00');
    expect(formatUsdCents('12.5')).toBe('$12.50');
    expect(formatUsdCents('0.000123')).toBe('<$0.01');
    expect(formatUsdCents('-0.000123')).toBe('-<$0.01');
    expect(formatUsdCents('-2.345')).toBe('-$2.35');
    // Beyond float precision, still exact before rounding.
    expect(formatUsdCents('9007199254740993.005')).toBe('$9,007,199,254,740,993.01');
  });

  it('shows every amount exactly: two decimals for whole cents, more only when the amount has them', () => {
    expect(formatUsd('12.5')).toBe('$12.50');
    expect(formatUsd('0')).toBe('$0.00');
    expect(formatUsd('1234567.891')).toBe('$1,234,567.891');
    expect(formatUsd('0.000123')).toBe('$0.000123');
    expect(formatUsd('0.000000001')).toBe('$0.000000001');
    expect(formatUsd('-2.345')).toBe('-$2.345');
    expect(formatUsd('-1.68')).toBe('-$1.68');
    expect(formatCost('0.00822')).toBe('$0.00822');
    // 0.1 + 0.2 style float errors cannot appear.
    expect(formatUsd(sumUsd(['0.1', '0.2']))).toBe('$0.30');
    expect(sumUsd(['0.1', '0.2'])).toBe('0.3');
  });

  it('makes a running balance add up on screen (the issue: $4.77 − $1.68 shown as $3.10)', () => {
    const before = '4.774';
    const charge = '-1.676';
    const after = sumUsd([before, charge]);
    expect([formatUsd(before), formatUsd(charge), formatUsd(after)]).toEqual(['$4.774', '-$1.676', '$3.098']);
    // What is shown parses back to exactly what was added.
    const shown = (text: string) => toNano(text.replace(/[$,]/g, ''));
    expect(shown(formatUsd(before)) + shown(formatUsd(charge))).toBe(shown(formatUsd(after)));
  });

  it('gives chart axes one number of decimals per axis', () => {
    const cents = axisUsdFormatter([0, 0.05, 0.1, 0.15]);
    expect([0, 0.05, 0.1].map(cents)).toEqual(['$0.00', '$0.05', '$0.10']);
    const small = axisUsdFormatter([0, 0.0005, 0.001]);
    expect([0, 0.0005, 0.001].map(small)).toEqual(['$0.0000', '$0.0005', '$0.0010']);
    expect(axisUsdFormatter([0, 5, 10])(10)).toBe('$10.00');
    // Round ticks (the issue: $0.002, $0.005, $0.007 from quarters of the highest bar).
    const ticks = niceTicks(0.009675);
    expect(ticks).toEqual([0, 0.0025, 0.005, 0.0075, 0.01]);
    expect(ticks.map(axisUsdFormatter(ticks))).toEqual(['$0.0000', '$0.0025', '$0.0050', '$0.0075', '$0.0100']);
    expect(niceTicks(1645)).toEqual([0, 500, 1000, 1500, 2000]);
    expect(niceTicks(0)).toEqual([0]);
  });

  it('round-trips nano-USD and validates cent amounts typed into forms', () => {
    expect(fromNano(12_500_000_000n)).toBe('12.5');
    expect(fromNano(-1n)).toBe('-0.000000001');
    expect(isCentsAmount('10')).toBe(true);
    expect(isCentsAmount('2.50')).toBe(true);
    expect(isCentsAmount('2.505')).toBe(false);
    expect(isCentsAmount('0')).toBe(false);
    expect(isCentsAmount('-5')).toBe(false);
    expect(isCentsAmount('1e2')).toBe(false);
  });
});
