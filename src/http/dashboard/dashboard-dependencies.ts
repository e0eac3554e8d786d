import type { CatalogEditor } from '../../config/catalog-editor.js';
import type { AccountService } from '../../accounts/account-service.js';
import type { AlertRules } from '../../alerts/alert-rules.js';
import type { AlertRepository } from '../../storage/alert-types.js';
import type { AuditLog } from '../../accounts/audit/audit-log.js';
import type { SignInAudit } from '../../accounts/audit/sign-in-audit.js';
import type { ReceiptRepository } from '../../storage/audit-types.js';
import type { LoginThrottle } from '../../accounts/login-throttle.js';
import type { OrganisationMembers } from '../../accounts/organisation-members.js';
import type { OrganisationService } from '../../accounts/organisation-service.js';
import type { ProjectService } from '../../accounts/project-service.js';
import type { SpendLimitService } from '../../billing/spend-limit-service.js';
import type { RegistrationThrottle } from '../../accounts/registration-throttle.js';
import type { SessionService } from '../../accounts/session-service.js';
import type { ModelPrices } from '../../billing/prices.js';
import type { StripeTopups } from '../../billing/stripe-topups.js';
import type { TierUpgrades } from '../../billing/tier-upgrades.js';
import type { AccountDeletion } from '../../identity/account-deletion.js';
import type { AccountSessions } from '../../identity/account-sessions.js';
import type { EmailIdentity } from '../../identity/email-identity.js';
import type { IdentityServices } from '../../identity/identity-services.js';
import type { OrganisationInvitations } from '../../identity/organisation-invitations.js';
import type { KeyService } from '../../keys/key-service.js';
import type { Tiers } from '../../ratelimit/tiers.js';
import type { ModelCatalog } from '../../catalog/model-catalog.js';
import type { BillingRepository } from '../../storage/billing-types.js';
import type { AccountRepository, UsageRepository } from '../../storage/types.js';
import type { UsageExportRepository } from '../../storage/usage-export-types.js';

/** One upstream credential as the operator view shows it. */
export interface UpstreamCredentialStatus {
  vendor: string;
  label: string;
  baseUrl: string;
  state: 'healthy' | 'cooling_down';
  coolingDownUntil: number | null;
  recentFailures: number;
  /** The operator's deployment the credential belongs to (null: the vendor's own credentials). */
  deployment: string | null;
  /** Its share of requests relative to the others serving the same models. */
  weight: number;
  /** Attempts since the gateway started, and how many failed. */
  attempts: number;
  failures: number;
  /** The last failure (`status_503`, `connect`, `timeout`, …) and when, epoch ms. */
  lastError: { reason: string; at: number } | null;
  /** Mean time to the upstream's answer of its successful attempts, ms (null before one). */
  meanLatencyMs: number | null;
}

export interface DashboardDependencies {
  accounts: AccountService;
  accountRepository: AccountRepository;
  /** The person's organisations and the one a session works in. */
  organisations: OrganisationService;
  /** The organisation's projects: groups of keys with their own model allowlist. */
  projects: ProjectService;
  /** Spend limits per period of the organisation, its projects and its keys. */
  spendLimits: SpendLimitService;
  /** The audit log: recorded by every route that changes keys, tiers, settings or money; read by `/api/audit`. */
  audit: AuditLog;
  /** Sign-in attempts, successes and failures, in the audit log of the person's organisations. */
  signInAudit: SignInAudit;
  /** Ledger entries as receipts print them. */
  receipts: ReceiptRepository;
  /** Members of an organisation: roles, removal, leaving. */
  members: OrganisationMembers;
  /** Invitations to an organisation, by mail or by a link the inviter passes on. */
  invitations: OrganisationInvitations;
  keys: KeyService;
  sessions: SessionService;
  /** Second factors, passkeys and single sign-on. */
  signInMethods: IdentityServices;
  loginThrottle: LoginThrottle;
  registrationThrottle: RegistrationThrottle;
  /** Verified email, reset links, email change (src/identity). */
  emailIdentity: EmailIdentity;
  accountSessions: AccountSessions;
  accountDeletion: AccountDeletion;
  billing: BillingRepository;
  /** Budget alert rules, checked before they are stored. */
  alertRules: AlertRules;
  /** Recent firings and deliveries, for the Limits & alerts page. */
  alertHistory: Pick<AlertRepository, 'recentFirings' | 'recentDeliveries'>;
  usage: UsageRepository;
  /** Usage records of a date range in keyset pages: the usage export. */
  usageExport: UsageExportRepository;
  /** The public models: the Models page's prices and capabilities. */
  catalog: ModelCatalog;
  tiers: Tiers;
  /** Self-serve upgrades; also recomputes the tier after top-ups and redeemed codes. */
  tierUpgrades: TierUpgrades;
  freeTokensPerDay: number;
  /** Present when STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET are set. */
  stripe: StripeTopups | undefined;
  /** PUBLIC_BASE_URL: Checkout return URLs, the base URL shown to users, Secure cookies when https. */
  publicBaseUrl: string | undefined;
  /** The state of every upstream credential, when the gateway tracks it. */
  upstreams?: () => UpstreamCredentialStatus[];
  /** A model's catalog prices by public id: how the reconcile replays the split rule (none: order only). */
  pricesOf?: (modelId: string) => ModelPrices | undefined;
  /** The operator's catalog edits (operator view); absent where the gateway runs without them. */
  catalogEditor?: CatalogEditor;
  now: () => number;
}
