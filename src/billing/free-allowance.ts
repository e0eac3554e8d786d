/** The free daily allowance runs per UTC day: day numbers count days since the epoch. */
export const MS_PER_DAY = 86_400_000;

export function utcDayNumber(at: number): number {
  return Math.floor(at / MS_PER_DAY);
}

/** When the allowance of the day containing `at` resets: the next 00:00 UTC. */
export function nextAllowanceReset(at: number): Date {
  return new Date((utcDayNumber(at) + 1) * MS_PER_DAY);
}
