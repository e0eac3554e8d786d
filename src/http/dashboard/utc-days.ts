import { MS_PER_DAY, utcDayNumber } from '../../billing/free-allowance.js';

/** `YYYY-MM-DD` (UTC) of a day number (days since the epoch). */
export function dayText(dayNumber: number): string {
  return new Date(dayNumber * MS_PER_DAY).toISOString().slice(0, 10);
}

/** Every UTC day from `first` to `last` (day numbers, inclusive) as `YYYY-MM-DD`, oldest first. */
export function dayRange(first: number, last: number): string[] {
  const days: string[] = [];
  for (let day = first; day <= last; day++) days.push(dayText(day));
  return days;
}

/** The day number of the first day of the UTC month containing `at`. */
export function monthStartDay(at: number): number {
  const date = new Date(at);
  return utcDayNumber(Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1));
}

export { utcDayNumber };
