import { sql, type Kysely } from 'kysely';

/**
 * Budget alerts: an organisation's rules, each time one fired, and each notice it sent. One definition for both
 * dialects.
 *
 * - `alert_rules`: a `low_balance` rule fires when the balance falls below `amount_nano`; a `limit_threshold` rule
 *   when spend reaches `threshold_percent` of the limit of (`scope`, `scope_id`, `period`). Channels: mail
 *   (`email_to`, a JSON list of addresses, or null for the organisation's owners, admins and billing members) and a
 *   webhook (`webhook_url`, signed with `webhook_secret`: kept because every delivery is signed with it, never shown
 *   after creation). `armed_at` starts a low-balance rule's current period: it moves on when the balance is back
 *   at or above the amount, so the rule fires again on the next fall.
 * - `alert_firings`: one row per rule per period. The unique (rule_id, period_start) decides, across instances,
 *   which evaluation fires: the one whose insert lands. Kept after the rule is deleted, as history.
 * - `alert_deliveries`: one notice of a firing on one channel, with its attempts, the receiver's status, the last
 *   error and the next retry; pending rows are the persisted queue the delivery worker claims under a lease.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('alert_rules')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('organisation_id', 'text', (column) => column.notNull().references('organisations.id'))
    .addColumn('kind', 'text', (column) => column.notNull().check(sql`kind in ('low_balance', 'limit_threshold')`))
    .addColumn('amount_nano', 'bigint')
    .addColumn('threshold_percent', 'integer', (column) =>
      column.check(sql`threshold_percent is null or (threshold_percent >= 1 and threshold_percent <= 100)`),
    )
    .addColumn('scope', 'text', (column) =>
      column.check(sql`scope is null or scope in ('organisation', 'project', 'key')`),
    )
    .addColumn('scope_id', 'text')
    .addColumn('period', 'text', (column) => column.check(sql`period is null or period in ('day', 'week', 'month')`))
    .addColumn('email_enabled', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('email_to', 'text')
    .addColumn('webhook_url', 'text')
    .addColumn('webhook_secret', 'text')
    .addColumn('armed_at', 'bigint', (column) => column.notNull())
    .addColumn('created_by', 'text')
    .addColumn('created_at', 'bigint', (column) => column.notNull())
    .addColumn('updated_at', 'bigint', (column) => column.notNull())
    .execute();
  await db.schema
    .createIndex('alert_rules_organisation_idx')
    .on('alert_rules')
    .columns(['organisation_id', 'created_at'])
    .execute();

  await db.schema
    .createTable('alert_firings')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('rule_id', 'text', (column) => column.notNull())
    .addColumn('organisation_id', 'text', (column) => column.notNull())
    .addColumn('period_start', 'bigint', (column) => column.notNull())
    .addColumn('fired_at', 'bigint', (column) => column.notNull())
    .addColumn('payload', 'text', (column) => column.notNull())
    .addUniqueConstraint('alert_firings_rule_period_key', ['rule_id', 'period_start'])
    .execute();
  await db.schema
    .createIndex('alert_firings_organisation_idx')
    .on('alert_firings')
    .columns(['organisation_id', 'fired_at'])
    .execute();

  await db.schema
    .createTable('alert_deliveries')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('firing_id', 'text', (column) => column.notNull().references('alert_firings.id'))
    .addColumn('rule_id', 'text', (column) => column.notNull())
    .addColumn('organisation_id', 'text', (column) => column.notNull())
    .addColumn('channel', 'text', (column) => column.notNull().check(sql`channel in ('email', 'webhook')`))
    .addColumn('status', 'text', (column) => column.notNull().check(sql`status in ('pending', 'delivered', 'failed')`))
    .addColumn('attempts', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('status_code', 'integer')
    .addColumn('error', 'text')
    .addColumn('next_attempt_at', 'bigint')
    .addColumn('lease_owner', 'text')
    .addColumn('lease_expires_at', 'bigint')
    .addColumn('delivered_at', 'bigint')
    .addColumn('created_at', 'bigint', (column) => column.notNull())
    .execute();
  // The worker's queue: pending rows by when they are due.
  await db.schema
    .createIndex('alert_deliveries_due_idx')
    .on('alert_deliveries')
    .columns(['status', 'next_attempt_at'])
    .execute();
  await db.schema
    .createIndex('alert_deliveries_organisation_idx')
    .on('alert_deliveries')
    .columns(['organisation_id', 'created_at'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('alert_deliveries').execute();
  await db.schema.dropTable('alert_firings').execute();
  await db.schema.dropTable('alert_rules').execute();
}
