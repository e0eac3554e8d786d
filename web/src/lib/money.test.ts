import { describe, expect, it } from 'vitest';
import { formatCost, formatUsd, fromNano, isCentsAmount, sumUsd, toNano } from './money';

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

  it('formats balances in cents, rounding half away from zero, with thousands separators', () => {
    expect(formatUsd('12.5')).toBe('$12.50');
    expect(formatUsd('0')).toBe('$0.00');
    expect(formatUsd('1234567.891')).toBe('$1,234,567.89');
    expect(formatUsd('0.005')).toBe('$0.01');
    expect(formatUsd('0.004999999')).toBe('$0.00');
    expect(formatUsd('-2.345')).toBe('-$2.35');
    expect(formatUsd('-0.001')).toBe('$0.00');
    // 0.1 + 0.2 style float errors cannot appear.
    expect(formatUsd(sumUsd(['0.1', '0.2']))).toBe('$0.30');
    expect(sumUsd(['0.1', '0.2'])).toBe('0.3');
  });

  it('keeps sub-cent request costs visible', () => {
    expect(formatCost('0.000123')).toBe('$0.000123');
    expect(formatCost('0.00822')).toBe('$0.00822');
    expect(formatCost('0.0000001')).toBe('$0.00');
    expect(formatCost('0')).toBe('$0.00');
    expect(formatCost('1.234567')).toBe('$1.23');
    expect(formatCost('-0.0004')).toBe('-$0.0004');
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
