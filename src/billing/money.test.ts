import { describe, expect, it } from 'vitest';
import { describeUsd, formatUsd, parseUsd } from './money.js';

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
