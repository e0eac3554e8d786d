import { sql, type Kysely } from 'kysely';

/**
 * Spend limits per day, week, month (and, for keys, in total) at three levels: an organisation, a project, a key
 * (docs/billing.md#spend-limits). One definition for both dialects.
 *
 * - `spend_limits`: one row per scope and period (`scope` organisation | project | key, `scope_id` the organisation's,
 *   project's or key's id), always with the paying organisation's id, so admission reads every limit of a request
 *   with one indexed lookup under the wallet row's lock. `period_start` numbers the period `used_nano` belongs to
 *   (UTC day, ISO week from Monday, year*12+month, 0 for `total`); an older number means nothing spent yet in the
 *   current one. `reserved_nano` is what requests in flight hold against the limit.
 * - `spend_limit_holds`: what each reservation holds against each limit, so settlement and the sweeper release
 *   exactly that whatever the limits became meanwhile (a cleared limit takes its holds with it).
 *
 * Key limits move here from api_keys (0007), their counters and the holds in flight against them included; the old
 * columns, and reservations.key_hold_nano, are dropped.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('spend_limits')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('organisation_id', 'text', (column) => column.notNull())
    .addColumn('scope', 'text', (column) => column.notNull())
    .addColumn('scope_id', 'text', (column) => column.notNull())
    .addColumn('period', 'text', (column) => column.notNull())
    .addColumn('limit_nano', 'bigint', (column) => column.notNull())
    .addColumn('used_nano', 'bigint', (column) => column.notNull().defaultTo(0))
    .addColumn('reserved_nano', 'bigint', (column) => column.notNull().defaultTo(0))
    .addColumn('period_start', 'bigint', (column) => column.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (column) => column.notNull())
    .addColumn('updated_at', 'bigint', (column) => column.notNull())
    .addUniqueConstraint('spend_limits_scope_period_key', ['scope', 'scope_id', 'period'])
    .execute();
  await db.schema.createIndex('spend_limits_organisation_idx').on('spend_limits').column('organisation_id').execute();
  await db.schema
    .createTable('spend_limit_holds')
    .addColumn('request_id', 'text', (column) => column.notNull())
    .addColumn('limit_id', 'text', (column) => column.notNull())
    .addColumn('hold_nano', 'bigint', (column) => column.notNull())
    .addPrimaryKeyConstraint('spend_limit_holds_pkey', ['request_id', 'limit_id'])
    .execute();
  await db.schema.createIndex('spend_limit_holds_limit_idx').on('spend_limit_holds').column('limit_id').execute();

  await sql`
    insert into spend_limits (id, organisation_id, scope, scope_id, period, limit_nano, used_nano, reserved_nano,
      period_start, created_at, updated_at)
    select 'sl_' || id, account_id, 'key', id, spend_period, spend_limit_nano, spend_used_nano, spend_reserved_nano,
      spend_period_start, created_at, created_at
    from api_keys where spend_limit_nano is not null and spend_period in ('day', 'month', 'total')`.execute(db);
  await sql`
    insert into spend_limit_holds (request_id, limit_id, hold_nano)
    select r.request_id, 'sl_' || r.api_key_id, r.key_hold_nano
    from reservations r join spend_limits l on l.id = 'sl_' || r.api_key_id
    where r.key_hold_nano <> 0`.execute(db);

  await db.schema.alterTable('reservations').dropColumn('key_hold_nano').execute();
  // SQLite takes one DROP COLUMN per ALTER TABLE.
  for (const name of OLD_KEY_COLUMNS) await db.schema.alterTable('api_keys').dropColumn(name).execute();
}

const OLD_KEY_COLUMNS = [
  'spend_limit_nano',
  'spend_period',
  'spend_period_start',
  'spend_used_nano',
  'spend_reserved_nano',
] as const;

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('reservations')
    .addColumn('key_hold_nano', 'bigint', (column) => column.notNull().defaultTo(0))
    .execute();
  await db.schema.alterTable('api_keys').addColumn('spend_limit_nano', 'bigint').execute();
  await db.schema.alterTable('api_keys').addColumn('spend_period', 'text').execute();
  for (const name of ['spend_period_start', 'spend_used_nano', 'spend_reserved_nano']) {
    await db.schema
      .alterTable('api_keys')
      .addColumn(name, 'bigint', (column) => column.notNull().defaultTo(0))
      .execute();
  }
  // One limit a key could have before: its day, month or total limit (a week limit has no older form).
  await sql`
    update api_keys set
      spend_limit_nano = (select l.limit_nano from spend_limits l where l.scope = 'key' and l.scope_id = api_keys.id and l.period in ('day', 'month', 'total') order by l.period limit 1),
      spend_period = (select l.period from spend_limits l where l.scope = 'key' and l.scope_id = api_keys.id and l.period in ('day', 'month', 'total') order by l.period limit 1)`.execute(
    db,
  );
  await db.schema.dropTable('spend_limit_holds').execute();
  await db.schema.dropTable('spend_limits').execute();
}
