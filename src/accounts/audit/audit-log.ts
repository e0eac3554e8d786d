import { nextAuditEventId } from '../../ids/audit-event-id.js';
import type { AuditEventRecord, AuditQuery, AuditRepository, BillingDetails } from '../../storage/audit-types.js';
import type { OrganisationRepository } from '../../storage/organisation-types.js';
import type { ApiKeyRecord } from '../../storage/types.js';
import { roleAllows } from '../organisation-roles.js';
import type { AuditAction } from './audit-actions.js';
import { auditJson } from './audit-snapshots.js';

/** Who made a change. */
export type AuditActor =
  /** A member, in the dashboard or (with `keyId`) through an API key (whose calls do not carry the email). */
  | { type: 'person'; accountId: string; email?: string | null; keyId?: string | null }
  /** The operator: the CLI (no account), or an operator account in the operator view. */
  | { type: 'operator'; accountId?: string | null; email?: string | null }
  /** The gateway on its own or a payment provider's webhook; `name` says which (`stripe`). */
  | { type: 'system'; name: string };

export interface AuditEntry {
  /** The organisation whose keys, tier, settings or money changed. */
  organisationId: string;
  actor: AuditActor;
  /** The client address of the request (Fastify's `request.ip`); null from the CLI. */
  ip: string | null;
  action: AuditAction;
  target?: { type: string; id: string } | null;
  /** Values replaced and written: plain data, bigint amounts allowed; secret-looking fields are dropped. */
  before?: unknown;
  after?: unknown;
}

/**
 * The audit log's one way in. `record` appends one event; call it right after the change it describes has
 * committed (or use a repository method that writes both in one transaction, as billing details do). It throws
 * when the append fails, so a caller never reports success for a change it could not audit.
 */
export class AuditLog {
  constructor(
    private readonly events: AuditRepository,
    private readonly organisations: Pick<OrganisationRepository, 'membership'>,
    private readonly now: () => number = Date.now,
  ) {}

  async record(entry: AuditEntry): Promise<void> {
    await this.events.append({
      ...this.base(entry),
      beforeJson: auditJson(entry.before),
      afterJson: auditJson(entry.after),
    });
  }

  /** Newest first; the caller pages with `olderThan`. */
  list(query: AuditQuery): Promise<AuditEventRecord[]> {
    return this.events.list(query);
  }

  /**
   * Whether an API key may read its organisation's audit log (the route has checked its `audit:read` scope): the
   * person who created it must, today, hold a role that reads the log there (owner or admin). A key keeps no
   * power its creator lost: demoted or removed, their keys stop reading on the next request.
   */
  async apiKeyMayRead(key: ApiKeyRecord): Promise<boolean> {
    if (key.createdBy === null) return false;
    const membership = await this.organisations.membership(key.accountId, key.createdBy);
    return membership !== null && roleAllows(membership.role, 'audit:read');
  }

  /** Sets the billing details and records the change in the same transaction; null when there is no organisation. */
  setBillingDetails(
    details: BillingDetails,
    entry: Omit<AuditEntry, 'action' | 'before' | 'after' | 'target'>,
  ): Promise<{ before: BillingDetails; after: BillingDetails } | null> {
    return this.events.setBillingDetails(
      entry.organisationId,
      details,
      this.base({
        ...entry,
        action: 'organisation.billing_details',
        target: { type: 'organisation', id: entry.organisationId },
      }),
    );
  }

  /** Renames the organisation and records it in the same transaction; null when there is no organisation. */
  rename(
    name: string,
    entry: Omit<AuditEntry, 'action' | 'before' | 'after' | 'target'>,
  ): Promise<{ before: { name: string }; after: { name: string } } | null> {
    return this.events.rename(
      entry.organisationId,
      name,
      this.base({
        ...entry,
        action: 'organisation.rename',
        target: { type: 'organisation', id: entry.organisationId },
      }),
    );
  }

  private base(entry: AuditEntry): Omit<AuditEventRecord, 'beforeJson' | 'afterJson'> {
    const { actor } = entry;
    const createdAt = this.now();
    return {
      id: nextAuditEventId(createdAt),
      organisationId: entry.organisationId,
      createdAt,
      actorType: actor.type,
      actorId: actor.type === 'system' ? actor.name : (actor.accountId ?? null),
      actorEmail: actor.type === 'system' ? null : (actor.email ?? null),
      actorKeyId: actor.type === 'person' ? (actor.keyId ?? null) : null,
      ip: entry.ip,
      action: entry.action,
      targetType: entry.target?.type ?? null,
      targetId: entry.target?.id ?? null,
    };
  }
}
