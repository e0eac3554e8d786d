import { sql, type Kysely } from 'kysely';
import { createAccountRepository } from './account-repository.js';
import { createAlertRepository } from './alert-repository.js';
import { createApiKeyRepository } from './api-key-repository.js';
import { createSpendLimitRepository } from './spend-limit-repository.js';
import { createAuditRepository, createReceiptRepository } from './audit-repository.js';
import { createBillingLedgerRepository } from './billing-ledger-repository.js';
import type { BillingLedgerRepository, BillingRepository, BillingStore, OwnedBillingStore } from './billing-types.js';
import type { Database, UniqueViolationDetector } from './database-schema.js';
import type { HeldInMemory } from './held-in-memory.js';
import { createIdentityFactorRepository } from './identity-factor-repository.js';
import { createIdentityRepository } from './identity-repository.js';
import { createOrganisationInvitationRepository } from './organisation-invitation-repository.js';
import { createOrganisationRepository } from './organisation-repository.js';
import { createProjectRepository } from './project-repository.js';
import { createLoginFailureRepository, createSessionRepository } from './session-repository.js';
import { createTierRepository } from './tier-repository.js';
import type { ApiKeyWithOrganisation, Storage } from './types.js';
import { createStoredResponseRepository } from './stored-response-repository.js';
import { createUsageRepository } from './usage-repository.js';
import { createUsageExportRepository } from './usage-export-repository.js';
import { createCatalogEntryRepository } from './catalog-entry-repository.js';

/** What a dialect contributes; everything else (all the queries but the money hot path) is shared. */
export interface KyselyStorageParts {
  dialect: Storage['dialect'];
  db: Kysely<Database>;
  isUniqueViolation: UniqueViolationDetector;
  migrate: () => Promise<string[]>;
  /** The database's own billing store (the money hot path); closed before the database. */
  billingStore: OwnedBillingStore;
  /** The request path's key lookup, when the database has a faster one than the Kysely join. */
  findKeyWithOrganisation?: (keyHash: string) => Promise<ApiKeyWithOrganisation | null>;
  /** SQLite's live holds, kept in memory: every view of "reserved" adds them (held-in-memory.ts). */
  heldInMemory?: HeldInMemory;
}

/** Each storage's billing store, for the tests that look at which of its paths ran (never needed to serve). */
const stores = new WeakMap<Storage, BillingStore>();

export function billingStoreOf(storage: Storage): BillingStore | undefined {
  return stores.get(storage);
}

export function createKyselyStorage(parts: KyselyStorageParts): Storage {
  const { db, billingStore } = parts;
  const held = parts.heldInMemory;
  const apiKeys = createApiKeyRepository(db, parts.dialect, held !== undefined);
  let closing: Promise<void> | undefined;
  const storage: Storage = {
    dialect: parts.dialect,
    accounts: createAccountRepository(db, parts.dialect, parts.isUniqueViolation),
    organisations: createOrganisationRepository(db, parts.dialect),
    projects: createProjectRepository(db, parts.dialect, parts.isUniqueViolation),
    audit: createAuditRepository(db, parts.dialect),
    receipts: createReceiptRepository(db),
    organisationInvitations: createOrganisationInvitationRepository(db, parts.dialect),
    apiKeys:
      parts.findKeyWithOrganisation === undefined
        ? apiKeys
        : { ...apiKeys, findByHashWithOrganisation: parts.findKeyWithOrganisation },
    usage: createUsageRepository(db),
    billing: combineBilling(createBillingLedgerRepository(db, parts.dialect, held), billingStore),
    spendLimits: createSpendLimitRepository(db, parts.dialect, held),
    sessions: createSessionRepository(db),
    loginFailures: createLoginFailureRepository(db),
    identity: createIdentityRepository(db, parts.dialect, parts.isUniqueViolation),
    responses: createStoredResponseRepository(db),
    tierUpgrades: createTierRepository(db, parts.dialect, held),
    identityFactors: createIdentityFactorRepository(db),
    usageExport: createUsageExportRepository(db),
    catalog: createCatalogEntryRepository(db, parts.dialect),
    alerts: createAlertRepository(db, parts.dialect),
    migrate: parts.migrate,
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    // Idempotent: shutdown paths may race (signal handler and a failed start both closing). The store first: its
    // queued writes go in before the database closes.
    close: () =>
      (closing ??= (async () => {
        await billingStore.close();
        await db.destroy();
      })()),
  };
  stores.set(storage, billingStore);
  return storage;
}

/** The ledger repository and the store as one `billing`, each call forwarded to the one that owns it. */
function combineBilling(ledger: BillingLedgerRepository, store: BillingStore): BillingRepository {
  return {
    ...ledger,
    reserve: (input) => store.reserve(input),
    settle: (input) => store.settle(input),
    extendHold: (requestId, expiresAt) => store.extendHold(requestId, expiresAt),
    releaseExpiredReservations: (now, limit) => store.releaseExpiredReservations(now, limit),
    sweepExpiredReservations: (now, bill, limit) => store.sweepExpiredReservations(now, bill, limit),
    renewHolds: (renewals) => store.renewHolds(renewals),
    grantSlice: (input) => store.grantSlice(input),
  };
}
