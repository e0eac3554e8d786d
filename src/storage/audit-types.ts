/**
 * Storage of the audit log (0018-audit-log) and of the ledger entries receipts are printed from. Times are Unix
 * epoch milliseconds. The repository appends and reads; it has no update or delete.
 */

export const AUDIT_ACTOR_TYPES = ['person', 'operator', 'system'] as const;
export type AuditActorType = (typeof AUDIT_ACTOR_TYPES)[number];

export interface AuditEventRecord {
  id: string;
  /** The organisation whose keys, tier, settings or money changed. */
  organisationId: string;
  createdAt: number;
  actorType: AuditActorType;
  /** The person (account id), or for `system` the component (e.g. `stripe`); null for the CLI operator. */
  actorId: string | null;
  /** The person's email at the time. */
  actorEmail: string | null;
  /** The API key that made the call (`/v1` routes); null otherwise. */
  actorKeyId: string | null;
  /** The client address of the request; null from the CLI and webhooks without one. */
  ip: string | null;
  action: string;
  targetType: string | null;
  targetId: string | null;
  /** JSON text of the values replaced and written; null where there is none (a creation has no before). */
  beforeJson: string | null;
  afterJson: string | null;
}

export interface AuditQuery {
  organisationId: string;
  /** Inclusive lower bound, epoch ms. */
  from?: number;
  /** Exclusive upper bound, epoch ms. */
  to?: number;
  /** Matches the actor's id, their email (case-insensitively) or the actor type (`operator`, `system`). */
  actor?: string;
  /** Only these actions. */
  actions?: readonly string[];
  /** Keyset cursor: only events older than this one (by time, then id). */
  olderThan?: { createdAt: number; id: string };
  limit: number;
}

export interface BillingDetails {
  billingName: string | null;
  billingAddress: string | null;
}

export interface AuditRepository {
  append(event: AuditEventRecord): Promise<void>;
  /** Newest first. */
  list(query: AuditQuery): Promise<AuditEventRecord[]>;
  /**
   * Sets the organisation's billing details and appends `event` with the details before and after, in one
   * transaction; null (and nothing written) when there is no such organisation.
   */
  setBillingDetails(
    organisationId: string,
    details: BillingDetails,
    event: Omit<AuditEventRecord, 'beforeJson' | 'afterJson'>,
  ): Promise<{ before: BillingDetails; after: BillingDetails } | null>;
  /** Renames the organisation and appends `event` with the names before and after, in one transaction. */
  rename(
    organisationId: string,
    name: string,
    event: Omit<AuditEventRecord, 'beforeJson' | 'afterJson'>,
  ): Promise<{ before: { name: string }; after: { name: string } } | null>;
}

/** A ledger entry as a receipt shows it. */
export interface ReceiptEntry {
  id: string;
  accountId: string;
  kind: string;
  amountNano: bigint;
  idempotencyKey: string;
  note: string | null;
  createdAt: number;
}

export interface ReceiptRepository {
  /** The entry, when it belongs to that account (the organisation's ledger); null otherwise. */
  ledgerEntry(accountId: string, entryId: string): Promise<ReceiptEntry | null>;
}
