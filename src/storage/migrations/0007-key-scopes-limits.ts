import type { Kysely } from 'kysely';

/**
 * Keys with scopes and limits (docs/architecture.md#key-scopes-and-limits). Every new column has a default that means
 * "as before": a key with NULL scopes has every scope, NULL models may use every model, a NULL spend limit and NULL
 * rate limits limit nothing. The spend counters live on the key row (not a table of their own) because admission and
 * settlement already lock the account row first and then touch this key's row: one more row under the same lock order.
 *
 * - `scopes`, `models`: space-separated lists (scope names and public model ids / family words have no spaces).
 * - `spend_limit_nano`, `spend_period` (`day` | `month` | `total`): the money limit, in nano-USD.
 * - `spend_period_start`: which period `spend_used_nano` belongs to (UTC day number, UTC month number
 *   year*12+month, or 0 for `total`); an older value means the counter starts again at zero.
 * - `spend_used_nano`: settled spend of that period; `spend_reserved_nano`: holds of requests in flight.
 * - `reservations.key_hold_nano`: what a hold counted against its key's limit, so settlement and the sweeper
 *   release exactly that, whatever the key's limit became meanwhile.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  // SQLite takes one ADD COLUMN per ALTER TABLE.
  const keyColumns: Array<[string, 'text' | 'bigint' | 'integer', string | number | null]> = [
    ['scopes', 'text', null],
    ['models', 'text', null],
    ['spend_limit_nano', 'bigint', null],
    ['spend_period', 'text', null],
    ['spend_period_start', 'bigint', 0],
    ['spend_used_nano', 'bigint', 0],
    ['spend_reserved_nano', 'bigint', 0],
    ['rate_limit_rpm', 'integer', null],
    ['rate_limit_tpm', 'integer', null],
  ];
  for (const [name, type, fallback] of keyColumns) {
    await db.schema
      .alterTable('api_keys')
      .addColumn(name, type, (column) => (fallback === null ? column : column.notNull().defaultTo(fallback)))
      .execute();
  }
  await db.schema
    .alterTable('reservations')
    .addColumn('key_hold_nano', 'bigint', (column) => column.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('reservations').dropColumn('key_hold_nano').execute();
  for (const name of [
    'scopes',
    'models',
    'spend_limit_nano',
    'spend_period',
    'spend_period_start',
    'spend_used_nano',
    'spend_reserved_nano',
    'rate_limit_rpm',
    'rate_limit_tpm',
  ]) {
    await db.schema.alterTable('api_keys').dropColumn(name).execute();
  }
}
