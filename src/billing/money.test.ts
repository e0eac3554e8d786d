import { describe, expect, it } from 'vitest';
import { affordableUnits, describeUsd, formatUsd, parseUsd } from './money.js';

describe('money in sentences', () => {
  it('follows the dashboard rule: exact, two decimals for whole cents, more only when the amount has them', () => {
    expect(describeUsd(parseUsd('4'))).toBe('$4.00');
    expect(describeUsd(parseUsd('2.5'))).toBe('$2.50');
    expect(describeUsd(parseUsd('0.0012345'))).toBe('$0.0012345');
    expect(describeUsd(-parseUsd('1.676'))).toBe('-$1.676');
    expect(describeUsd(0n)).toBe('$0.00');
    // The API's own strings stay trimmed decimals.
    expect(formatUsd(parseUsd('4'))).toBe('4');
  });
});

describe('affordableUnits', () => {
  it('counts whole units the money pays for, all of them when free, none without money', () => {
    expect(affordableUnits(5, 10n, 35n)).toBe(3);
    expect(affordableUnits(5, 10n, 500n)).toBe(5);
    expect(affordableUnits(5, 0n, 0n)).toBe(5);
    expect(affordableUnits(5, 10n, -20n)).toBe(0);
    expect(affordableUnits(0, 10n, 0n)).toBe(0);
  });
});
