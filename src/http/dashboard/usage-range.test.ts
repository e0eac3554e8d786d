import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../canonical/errors.js';
import { MAX_RANGE_DAYS, resolveUsageRange } from './usage-range.js';

const DAY_MS = 86_400_000;
const NOW = Date.parse('2026-03-15T10:00:00Z');
const TODAY = Math.floor(NOW / DAY_MS);
const text = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10);

/** The field a refused range names. */
function refusedField(query: Parameters<typeof resolveUsageRange>[0]): string | undefined {
  try {
    resolveUsageRange(query, NOW);
  } catch (error) {
    if (error instanceof GatewayError && error.code === 'invalid_request') return error.param;
    throw error;
  }
  throw new Error(`not refused: ${JSON.stringify(query)}`);
}

describe('resolveUsageRange', () => {
  it('takes a preset ending today, 30 days when nothing is asked', () => {
    expect(resolveUsageRange({}, NOW)).toEqual({ firstDay: TODAY - 29, lastDay: TODAY, label: '30d' });
    expect(resolveUsageRange({ days: '7' }, NOW)).toMatchObject({ firstDay: TODAY - 6, lastDay: TODAY });
  });

  it('takes custom days, inclusive, up to today and up to a year and a day', () => {
    expect(resolveUsageRange({ from: '2026-03-15', to: '2026-03-15' }, NOW)).toEqual({
      firstDay: TODAY,
      lastDay: TODAY,
      label: '2026-03-15_2026-03-15',
    });
    const longest = resolveUsageRange({ from: text(TODAY - MAX_RANGE_DAYS + 1), to: text(TODAY) }, NOW);
    expect(longest.lastDay - longest.firstDay + 1).toBe(MAX_RANGE_DAYS);
    // A leap day is a day.
    expect(resolveUsageRange({ from: '2024-02-29', to: '2024-03-01' }, NOW).lastDay).toBe(
      Date.parse('2024-03-01T00:00:00Z') / DAY_MS,
    );
  });

  it('refuses what it cannot show, naming the field', () => {
    expect(refusedField({ from: '2026-03-10', to: '2026-03-09' })).toBe('from');
    expect(refusedField({ from: '2026-03-10', to: '2026-03-16' })).toBe('to');
    expect(refusedField({ from: text(TODAY - MAX_RANGE_DAYS), to: text(TODAY) })).toBe('from');
    expect(refusedField({ from: '2026-02-30', to: '2026-03-01' })).toBe('from');
    expect(refusedField({ from: '2026-03-01', to: '2026-13-01' })).toBe('to');
    expect(refusedField({ from: '2026-03-01' })).toBe('to');
    expect(refusedField({ to: '2026-03-01' })).toBe('from');
    expect(refusedField({ days: '7', from: '2026-03-01', to: '2026-03-02' })).toBe('days');
  });
});
