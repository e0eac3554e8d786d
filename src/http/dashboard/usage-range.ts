import { z } from 'zod';
import { invalidRequest } from '../../canonical/errors.js';
import { MS_PER_DAY } from '../../billing/free-allowance.js';
import { utcDayNumber } from './utc-days.js';

/** The longest custom range the usage views answer: a year and a day, so a whole year from any date fits. */
export const MAX_RANGE_DAYS = 366;

const DAY = /^\d{4}-\d{2}-\d{2}$/;

/** `days=7|30|90` (a preset ending today), or `from` and `to` (UTC days, inclusive); the preset of 30 days when none. */
export const usageRangeFields = {
  days: z.enum(['7', '30', '90']).optional(),
  from: z.string().regex(DAY, 'Dates are YYYY-MM-DD.').optional(),
  to: z.string().regex(DAY, 'Dates are YYYY-MM-DD.').optional(),
};

/** A range of UTC days as day numbers, inclusive, and a label for file names. */
export interface UsageRange {
  firstDay: number;
  lastDay: number;
  label: string;
}

/** The day number of a `YYYY-MM-DD` text, or undefined when it is no calendar day (2026-02-30). */
function dayNumberOf(text: string): number | undefined {
  const at = Date.parse(`${text}T00:00:00Z`);
  if (Number.isNaN(at) || new Date(at).toISOString().slice(0, 10) !== text) return undefined;
  return Math.floor(at / MS_PER_DAY);
}

/**
 * The range a usage query asks for, or the 400 naming the field at fault: a day that does not exist, `from` after
 * `to`, a day after today, or a range longer than `MAX_RANGE_DAYS`. Both or neither of `from` and `to`, and not
 * with `days`.
 */
export function resolveUsageRange(
  query: { days?: string | undefined; from?: string | undefined; to?: string | undefined },
  now: number,
): UsageRange {
  const today = utcDayNumber(now);
  if (query.from === undefined && query.to === undefined) {
    const days = Number(query.days ?? '30');
    return { firstDay: today - (days - 1), lastDay: today, label: `${days}d` };
  }
  if (query.days !== undefined) throw invalidRequest("Give either 'days' or 'from' and 'to', not both.", 'days');
  if (query.from === undefined) throw invalidRequest("'from' is needed with 'to'.", 'from');
  if (query.to === undefined) throw invalidRequest("'to' is needed with 'from'.", 'to');
  const firstDay = dayNumberOf(query.from);
  if (firstDay === undefined) throw invalidRequest(`'${query.from}' is not a calendar day.`, 'from');
  const lastDay = dayNumberOf(query.to);
  if (lastDay === undefined) throw invalidRequest(`'${query.to}' is not a calendar day.`, 'to');
  if (firstDay > lastDay) throw invalidRequest("'from' is after 'to'.", 'from');
  if (lastDay > today) throw invalidRequest("'to' is after today (UTC).", 'to');
  if (lastDay - firstDay + 1 > MAX_RANGE_DAYS)
    throw invalidRequest(`A range is at most ${MAX_RANGE_DAYS} days.`, 'from');
  return { firstDay, lastDay, label: `${query.from}_${query.to}` };
}
