import { sql, type Kysely } from 'kysely';
import { createAccountRepository } from './account-repository.js';
import { createApiKeyRepository } from './api-key-repository.js';
import { createBillingRepository } from './billing-repository.js';
import type { Database, UniqueViolationDetector } from './database-schema.js';
import { createIdentityFactorRepository } from './identity-factor-repository.js';
import { createIdentityRepository } from './identity-repository.js';
import { createLoginFailureRepository, createSessionRepository } from './session-repository.js';
import { createTierRepository } from './tier-repository.js';
import type { Storage } from './types.js';
import { createStoredResponseRepository } from './stored-response-repository.js';
import { createUsageRepository } from './usage-repository.js';

/** What a dialect contributes; everything else (all the queries) is shared. */
export interface KyselyStorageParts {
  dialect: Storage['dialect'];
  db: Kysely<Database>;
  isUniqueViolation: UniqueViolationDetector;
  migrate: () => Promise<string[]>;
}

export function createKyselyStorage(parts: KyselyStorageParts): Storage {
  const { db } = parts;
  let closing: Promise<void> | undefined;
  return {
    dialect: parts.dialect,
    accounts: createAccountRepository(db, parts.isUniqueViolation),
    apiKeys: createApiKeyRepository(db, parts.dialect),
    usage: createUsageRepository(db),
    billing: createBillingRepository(db, parts.dialect),
    sessions: createSessionRepository(db),
    loginFailures: createLoginFailureRepository(db),
    identity: createIdentityRepository(db, parts.dialect, parts.isUniqueViolation),
    responses: createStoredResponseRepository(db),
    tierUpgrades: createTierRepository(db, parts.dialect),
    identityFactors: createIdentityFactorRepository(db),
    migrate: parts.migrate,
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    // Idempotent: shutdown paths may race (signal handler and a failed start both closing).
    close: () => (closing ??= db.destroy()),
  };
}
