import { dayNumber, dayText } from './usage-query';

export type ExportFormat = 'csv' | 'json';

/** Both days included, as the export form shows them (UTC). */
export interface ExportDays {
  from: string;
  through: string;
}

/** Why the pair cannot be exported, or undefined. Any length: the export routes stream their records in pages. */
export function exportDaysProblem({ from, through }: ExportDays): string | undefined {
  const first = dayNumber(from);
  const last = dayNumber(through);
  if (first === undefined) return 'Choose the first day.';
  if (last === undefined) return 'Choose the last day.';
  if (first > last) return 'The first day is after the last.';
  return undefined;
}

/** The export routes' `from` and exclusive `to`: 00:00 UTC of the first day and of the day after the last. */
export function exportRange({ from, through }: ExportDays): { from: string; to: string } {
  return { from, to: dayText((dayNumber(through) ?? 0) + 1) };
}
