import type { LedgerEntry } from './billing-types.js';
import type { UsageRecord } from './types.js';

/** A place in the usage records' export order: (created_at, request_id), both ascending. */
export interface ExportPosition {
  createdAt: number;
  requestId: string;
}

/** One sink's row of `export_cursors` (0019-usage-export-cursors). */
export interface ExportCursor {
  sink: string;
  /** The last record the sink's receiver accepted; null before the first. */
  position: ExportPosition | null;
  /** Records accepted so far. */
  exported: number;
  updatedAt: number;
}

export type ExportCursorTable = {
  sink: string;
  created_at: number;
  request_id: string;
  exported: number;
  lease_owner: string | null;
  lease_expires_at: number | null;
  updated_at: number;
};

export type UsageExportTables = {
  export_cursors: ExportCursorTable;
};

/** Reading settled usage in export order, and the sinks' cursors over it. */
export interface UsageExportRepository {
  /**
   * Every account's records after `after` and created before `before` (epoch ms, exclusive), oldest first, at
   * most `limit`: one keyset page through the created_at index, whatever the table's size.
   */
  pageAfter(after: ExportPosition | null, before: number, limit: number): Promise<UsageRecord[]>;
  /**
   * One account's records created in [`from`, `to`), oldest first after `after` (only one key's or one model's when
   * filtered): the pages of `GET /v1/usage/export` and of the dashboard's export.
   */
  accountPage(
    accountId: string,
    range: { from: number; to: number },
    after: ExportPosition | null,
    limit: number,
    filter?: { apiKeyId?: string | undefined; model?: string | undefined; projectId?: string | undefined },
  ): Promise<UsageRecord[]>;
  /**
   * One account's ledger entries created in [`from`, `to`), oldest first in (created_at, id) order after `after`:
   * the pages of the dashboard's ledger export.
   */
  ledgerPage(
    accountId: string,
    range: { from: number; to: number },
    after: { createdAt: number; id: string } | null,
    limit: number,
  ): Promise<LedgerEntry[]>;
  /**
   * Takes (or renews) the sink's lease for `owner` until `now + leaseMs` when nobody else holds an unexpired one,
   * creating the sink's row at the start of the records the first time. Null: another instance holds it.
   */
  claimCursor(sink: string, owner: string, now: number, leaseMs: number): Promise<ExportCursor | null>;
  /**
   * Moves the sink's position to `to` and adds `count` to its exported records, only while `owner` holds the lease
   * (false otherwise: another instance took over, and this one must stop sending).
   */
  advanceCursor(sink: string, owner: string, to: ExportPosition, count: number, now: number): Promise<boolean>;
  /** Gives the lease up (a closing instance), so another may take the sink over at once. */
  releaseCursor(sink: string, owner: string): Promise<void>;
  /** The sink's cursor as stored (null: never exported). */
  readCursor(sink: string): Promise<ExportCursor | null>;
}
