/** What the operator edits at run time (0024-catalog-entries): models, aliases and deployments. */
export const CATALOG_ENTRY_KINDS = ['model', 'alias', 'deployment'] as const;
export type CatalogEntryKind = (typeof CATALOG_ENTRY_KINDS)[number];

/** One stored entry: its document is the entry as tollgate.yaml would hold it (deployments name env variables). */
export interface CatalogEntryRecord {
  kind: CatalogEntryKind;
  id: string;
  document: Readonly<Record<string, unknown>>;
  /** The revision that last wrote it. */
  revision: number;
  updatedBy: string;
  updatedAt: number;
}

/** Every stored entry, as of one revision (0: nothing was ever edited). */
export interface CatalogSnapshot {
  revision: number;
  entries: readonly CatalogEntryRecord[];
}

export type CatalogChangeAction = 'put' | 'retire' | 'delete';

/** One row of the catalog's change history. */
export interface CatalogRevisionRecord {
  revision: number;
  kind: CatalogEntryKind;
  entryId: string;
  action: CatalogChangeAction;
  before: Readonly<Record<string, unknown>> | null;
  after: Readonly<Record<string, unknown>> | null;
  changedBy: string;
  changedAt: number;
}

/** A change to write: `document` null deletes the entry. */
export interface CatalogChange {
  kind: CatalogEntryKind;
  id: string;
  action: CatalogChangeAction;
  document: Readonly<Record<string, unknown>> | null;
  changedBy: string;
  at: number;
}

export type CatalogEntriesTable = {
  kind: string;
  id: string;
  document: string;
  revision: number;
  updated_by: string;
  updated_at: number;
};

export type CatalogRevisionsTable = {
  revision: number;
  kind: string;
  entry_id: string;
  action: string;
  before_json: string | null;
  after_json: string | null;
  changed_by: string;
  changed_at: number;
};

export type CatalogTables = {
  catalog_entries: CatalogEntriesTable;
  catalog_revisions: CatalogRevisionsTable;
};

/** The change was checked against a revision that is no longer the latest: check it again against the new one. */
export class CatalogRevisionConflict extends Error {
  constructor(readonly expected: number) {
    super(`the catalog changed after revision ${expected}; check the change again against the latest`);
    this.name = 'CatalogRevisionConflict';
  }
}

export interface CatalogEntryRepository {
  /** The latest revision (0 when nothing was ever edited): the cheap read every instance polls. */
  revision(): Promise<number>;
  /** Every stored entry and the revision they are at, read together. */
  snapshot(): Promise<CatalogSnapshot>;
  /**
   * Writes `change` as revision `expected + 1`, with its history row, in one transaction; throws
   * CatalogRevisionConflict when another change took that number first (nothing written).
   */
  write(expected: number, change: CatalogChange): Promise<number>;
  /** The latest changes, newest first. */
  history(limit: number): Promise<CatalogRevisionRecord[]>;
}
