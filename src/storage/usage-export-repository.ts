import type { Kysely, Selectable } from 'kysely';
import type { LedgerEntry } from './billing-types.js';
import type { Database } from './database-schema.js';
import type { UsageRecord } from './types.js';
import type {
  ExportCursor,
  ExportCursorTable,
  ExportPosition,
  UsageExportRepository,
  UsageExportTables,
} from './usage-export-types.js';
import { projectKeyIds, selectUsageColumns, toUsageRecord } from './usage-repository.js';
import { selectLedgerEntries, toLedgerEntry } from './billing-ledger-repository.js';

export function createUsageExportRepository(base: Kysely<Database>): UsageExportRepository {
  const db = base.withTables<UsageExportTables>();

  /** Records strictly after the position in (created_at, request_id) order. */
  function afterPosition(after: ExportPosition | null) {
    let query = selectUsageColumns(base);
    if (after !== null) {
      // The first condition is implied by the second; it is there so the index range starts at the position
      // (neither database derives a range bound from the OR), instead of every page scanning from the start.
      query = query
        .where('created_at', '>=', after.createdAt)
        .where((eb) =>
          eb.or([
            eb('created_at', '>', after.createdAt),
            eb.and([eb('created_at', '=', after.createdAt), eb('request_id', '>', after.requestId)]),
          ]),
        );
    }
    return query;
  }

  return {
    async pageAfter(after, before, limit): Promise<UsageRecord[]> {
      if (!Number.isSafeInteger(limit) || limit <= 0) return [];
      const rows = await afterPosition(after)
        .where('created_at', '<', before)
        .orderBy('created_at')
        .orderBy('request_id')
        .limit(limit)
        .execute();
      return rows.map(toUsageRecord);
    },

    async accountPage(accountId, range, after, limit, filter): Promise<UsageRecord[]> {
      if (!Number.isSafeInteger(limit) || limit <= 0) return [];
      // The (account_id, created_at) index: the range and the keyset are both on it.
      let query = afterPosition(after).where('account_id', '=', accountId);
      if (filter?.apiKeyId !== undefined) query = query.where('api_key_id', '=', filter.apiKeyId);
      if (filter?.model !== undefined) query = query.where('model', '=', filter.model);
      if (filter?.projectId !== undefined)
        query = query.where('api_key_id', 'in', projectKeyIds(base, accountId, filter.projectId));
      const rows = await query
        .where('created_at', '>=', range.from)
        .where('created_at', '<', range.to)
        .orderBy('created_at')
        .orderBy('request_id')
        .limit(limit)
        .execute();
      return rows.map(toUsageRecord);
    },

    async ledgerPage(accountId, range, after, limit): Promise<LedgerEntry[]> {
      if (!Number.isSafeInteger(limit) || limit <= 0) return [];
      // The (account_id, created_at) index, bounded below at the position as in `afterPosition`.
      let query = selectLedgerEntries(base)
        .where('entry.account_id', '=', accountId)
        .where('entry.created_at', '>=', range.from)
        .where('entry.created_at', '<', range.to);
      if (after !== null) {
        query = query
          .where('entry.created_at', '>=', after.createdAt)
          .where((eb) =>
            eb.or([
              eb('entry.created_at', '>', after.createdAt),
              eb.and([eb('entry.created_at', '=', after.createdAt), eb('entry.id', '>', after.id)]),
            ]),
          );
      }
      const rows = await query.orderBy('entry.created_at').orderBy('entry.id').limit(limit).execute();
      return rows.map(toLedgerEntry);
    },

    async claimCursor(sink, owner, now, leaseMs): Promise<ExportCursor | null> {
      await db
        .insertInto('export_cursors')
        .values({
          sink,
          created_at: 0,
          request_id: '',
          exported: 0,
          lease_owner: null,
          lease_expires_at: null,
          updated_at: now,
        })
        .onConflict((conflict) => conflict.column('sink').doNothing())
        .execute();
      // One conditional update decides between instances: the lease is free, expired, or already this owner's.
      const row = await db
        .updateTable('export_cursors')
        .set({ lease_owner: owner, lease_expires_at: now + leaseMs })
        .where('sink', '=', sink)
        .where((eb) =>
          eb.or([eb('lease_owner', 'is', null), eb('lease_owner', '=', owner), eb('lease_expires_at', '<', now)]),
        )
        .returningAll()
        .executeTakeFirst();
      return row === undefined ? null : toCursor(row);
    },

    async advanceCursor(sink, owner, to, count, now): Promise<boolean> {
      const result = await db
        .updateTable('export_cursors')
        .set((eb) => ({
          created_at: to.createdAt,
          request_id: to.requestId,
          exported: eb('exported', '+', count),
          updated_at: now,
        }))
        .where('sink', '=', sink)
        .where('lease_owner', '=', owner)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) === 1;
    },

    async releaseCursor(sink, owner): Promise<void> {
      await db
        .updateTable('export_cursors')
        .set({ lease_owner: null, lease_expires_at: null })
        .where('sink', '=', sink)
        .where('lease_owner', '=', owner)
        .execute();
    },

    async readCursor(sink): Promise<ExportCursor | null> {
      const row = await db.selectFrom('export_cursors').selectAll().where('sink', '=', sink).executeTakeFirst();
      return row === undefined ? null : toCursor(row);
    },
  };
}

function toCursor(row: Selectable<ExportCursorTable>): ExportCursor {
  const requestId = row.request_id;
  return {
    sink: row.sink,
    // Request ids are never empty: an empty one is the row's start, before every record.
    position: requestId === '' ? null : { createdAt: Number(row.created_at), requestId },
    exported: Number(row.exported),
    updatedAt: Number(row.updated_at),
  };
}
