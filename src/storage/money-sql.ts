import { sql, type RawBuilder } from 'kysely';

/**
 * Money columns are selected as text and parsed with BigInt, so no amount ever becomes a JS number (both
 * drivers would otherwise hand back a float-typed number for a 64-bit integer). Written as decimal strings,
 * which SQLite's INTEGER affinity and PostgreSQL's bigint both take exactly.
 */
export function money(column: string): RawBuilder<string> {
  return sql<string>`cast(${sql.ref(column)} as text)`;
}

/** A money value as a SQL expression: cast so SQLite compares and adds it as an integer, never as text. */
export function amount(value: bigint): RawBuilder<string> {
  return sql<string>`cast(${value.toString()} as bigint)`;
}

export function toMoneyParameter(amount: bigint): string {
  return amount.toString();
}

export function fromMoneyColumn(value: string | number | bigint | null): bigint {
  if (value === null) return 0n;
  if (typeof value === 'number' && !Number.isSafeInteger(value))
    throw new RangeError(`Money column read as an unsafe number: ${value}`);
  return BigInt(value);
}
