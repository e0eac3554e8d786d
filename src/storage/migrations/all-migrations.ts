import type { Migration } from 'kysely';
import * as initial from './0001-initial.js';
import * as billing from './0002-billing.js';
import * as dashboard from './0003-dashboard.js';
import * as usageRollup from './0004-usage-rollup.js';
import * as storedResponses from './0005-stored-responses.js';
import * as growingHolds from './0006-growing-holds.js';
import * as keyScopesLimits from './0007-key-scopes-limits.js';
import * as tierUpgrades from './0008-tier-upgrades.js';
import * as cacheWrite1h from './0009-cache-write-1h.js';
import * as serverToolUsage from './0010-server-tool-usage.js';
import * as unbilledUsage from './0011-unbilled-usage.js';
import * as localInputTokens from './0012-local-input-tokens.js';
import * as identityMail from './0013-identity-mail.js';
import * as identityFactors from './0014-identity-factors.js';
import * as organisations from './0015-organisations.js';
import * as organisationWallets from './0016-organisation-wallets.js';
import * as organisationInvitations from './0017-organisation-invitations.js';
import * as auditLog from './0018-audit-log.js';
import * as usageExportCursors from './0019-usage-export-cursors.js';
import * as projects from './0020-projects.js';
import * as spendLimits from './0021-spend-limits.js';
import * as budgetAlerts from './0022-budget-alerts.js';
import * as organisationSignInPolicy from './0023-organisation-sign-in-policy.js';
import * as catalogEntries from './0024-catalog-entries.js';

/**
 * Every migration, keyed by name; Kysely applies them in name order.
 * Listed statically (not discovered on disk) so that they run the same from `src/` under vitest and
 * from `dist/` in production. A new migration is a new file plus one line here; never edit an applied one.
 */
export const allMigrations: Readonly<Record<string, Migration>> = {
  '0001-initial': initial,
  '0002-billing': billing,
  '0003-dashboard': dashboard,
  '0004-usage-rollup': usageRollup,
  '0005-stored-responses': storedResponses,
  '0006-growing-holds': growingHolds,
  '0007-key-scopes-limits': keyScopesLimits,
  '0008-tier-upgrades': tierUpgrades,
  '0009-cache-write-1h': cacheWrite1h,
  '0010-server-tool-usage': serverToolUsage,
  '0011-unbilled-usage': unbilledUsage,
  '0012-local-input-tokens': localInputTokens,
  '0013-identity-mail': identityMail,
  '0014-identity-factors': identityFactors,
  '0015-organisations': organisations,
  '0016-organisation-wallets': organisationWallets,
  '0017-organisation-invitations': organisationInvitations,
  '0018-audit-log': auditLog,
  '0019-usage-export-cursors': usageExportCursors,
  '0020-projects': projects,
  '0021-spend-limits': spendLimits,
  '0022-budget-alerts': budgetAlerts,
  '0023-organisation-sign-in-policy': organisationSignInPolicy,
  '0024-catalog-entries': catalogEntries,
};
