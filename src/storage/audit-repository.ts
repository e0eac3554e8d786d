import type { Kysely, Selectable } from 'kysely';
import type { AuditEventsTable, Database } from './database-schema.js';
import {
  AUDIT_ACTOR_TYPES,
  type AuditActorType,
  type AuditEventRecord,
  type AuditRepository,
  type BillingDetails,
  type ReceiptRepository,
} from './audit-types.js';
import { fromMoneyColumn, money } from './money-sql.js';
import { writeTransaction, type Executor } from './transactions.js';
import type { Storage } from './types.js';

/** The audit log: append and read, nothing else (append-only by construction). */
export function createAuditRepository(db: Kysely<Database>, dialect: Storage['dialect']): AuditRepository {
  return {
    async append(event) {
      await insertEvent(db, event);
    },

    async list(query) {
      let select = db.selectFrom('audit_events').selectAll().where('organisation_id', '=', query.organisationId);
      if (query.from !== undefined) select = select.where('created_at', '>=', query.from);
      if (query.to !== undefined) select = select.where('created_at', '<', query.to);
      if (query.actions !== undefined) {
        if (query.actions.length === 0) return [];
        select = select.where('action', 'in', [...query.actions]);
      }
      const actor = query.actor;
      if (actor !== undefined) {
        select = select.where((eb) =>
          eb.or([
            eb('actor_id', '=', actor),
            eb(eb.fn('lower', ['actor_email']), '=', actor.toLowerCase()),
            eb('actor_type', '=', actor),
          ]),
        );
      }
      const older = query.olderThan;
      if (older !== undefined) {
        select = select.where((eb) =>
          eb.or([
            eb('created_at', '<', older.createdAt),
            eb.and([eb('created_at', '=', older.createdAt), eb('id', '<', older.id)]),
          ]),
        );
      }
      const rows = await select
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .limit(Math.max(0, query.limit))
        .execute();
      return rows.map(toAuditEvent);
    },

    async rename(organisationId, name, event) {
      return writeTransaction(db, dialect, async (trx) => {
        let read = trx.selectFrom('organisations').select(['name']).where('id', '=', organisationId);
        if (dialect === 'postgres') read = read.forUpdate();
        const row = await read.executeTakeFirst();
        if (row === undefined) return null;
        await trx.updateTable('organisations').set({ name }).where('id', '=', organisationId).execute();
        const before = { name: row.name };
        const after = { name };
        await insertEvent(trx, { ...event, beforeJson: JSON.stringify(before), afterJson: JSON.stringify(after) });
        return { before, after };
      });
    },

    async setBillingDetails(organisationId, details, event) {
      return writeTransaction(db, dialect, async (trx) => {
        let read = trx
          .selectFrom('organisations')
          .select(['billing_name', 'billing_address'])
          .where('id', '=', organisationId);
        if (dialect === 'postgres') read = read.forUpdate();
        const row = await read.executeTakeFirst();
        if (row === undefined) return null;
        const before: BillingDetails = { billingName: row.billing_name, billingAddress: row.billing_address };
        await trx
          .updateTable('organisations')
          .set({ billing_name: details.billingName, billing_address: details.billingAddress })
          .where('id', '=', organisationId)
          .execute();
        await insertEvent(trx, { ...event, beforeJson: JSON.stringify(before), afterJson: JSON.stringify(details) });
        return { before, after: details };
      });
    },
  };
}

/** The ledger entries receipts are printed from, read only within their own account's ledger. */
export function createReceiptRepository(db: Kysely<Database>): ReceiptRepository {
  return {
    async ledgerEntry(accountId, entryId) {
      const row = await db
        .selectFrom('ledger_entries')
        .select(['id', 'account_id', 'kind', 'idempotency_key', 'note', 'created_at'])
        .select(money('amount_nano').as('amount'))
        .where('id', '=', entryId)
        .where('account_id', '=', accountId)
        .executeTakeFirst();
      if (row === undefined) return null;
      return {
        id: row.id,
        accountId: row.account_id,
        kind: row.kind,
        amountNano: fromMoneyColumn(row.amount),
        idempotencyKey: row.idempotency_key,
        note: row.note,
        createdAt: Number(row.created_at),
      };
    },
  };
}

async function insertEvent(executor: Executor, event: AuditEventRecord): Promise<void> {
  await executor
    .insertInto('audit_events')
    .values({
      id: event.id,
      organisation_id: event.organisationId,
      created_at: event.createdAt,
      actor_type: event.actorType,
      actor_id: event.actorId,
      actor_email: event.actorEmail,
      actor_key_id: event.actorKeyId,
      ip: event.ip,
      action: event.action,
      target_type: event.targetType,
      target_id: event.targetId,
      before_json: event.beforeJson,
      after_json: event.afterJson,
    })
    .execute();
}

function toAuditEvent(row: Selectable<AuditEventsTable>): AuditEventRecord {
  return {
    id: row.id,
    organisationId: row.organisation_id,
    createdAt: Number(row.created_at),
    actorType: parseActorType(row.actor_type),
    actorId: row.actor_id,
    actorEmail: row.actor_email,
    actorKeyId: row.actor_key_id,
    ip: row.ip,
    action: row.action,
    targetType: row.target_type,
    targetId: row.target_id,
    beforeJson: row.before_json,
    afterJson: row.after_json,
  };
}

/** The CHECK constraint keeps other values out; this narrows the type without a blind cast. */
function parseActorType(value: string): AuditActorType {
  const found = AUDIT_ACTOR_TYPES.find((type) => type === value);
  if (found === undefined) throw new Error(`Unknown audit actor type in storage: ${JSON.stringify(value)}`);
  return found;
}
