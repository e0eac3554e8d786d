import { z } from 'zod';

/**
 * A page size from the query string: text of a whole number in 1..max, `fallback` when absent.
 * Parsed here so a bad value is a 400 naming the parameter.
 */
export const pageLimit = (max: number, fallback: number) =>
  z
    .string()
    .regex(/^\d+$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().int().min(1).max(max))
    .optional()
    .transform((value) => value ?? fallback);
