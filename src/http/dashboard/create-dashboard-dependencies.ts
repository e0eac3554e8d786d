import { AlertRules } from '../../alerts/alert-rules.js';
import type { AccountService } from '../../accounts/account-service.js';
import { AuditLog } from '../../accounts/audit/audit-log.js';
import { SignInAudit } from '../../accounts/audit/sign-in-audit.js';
import { LoginThrottle } from '../../accounts/login-throttle.js';
import { OrganisationMembers } from '../../accounts/organisation-members.js';
import { ProjectService } from '../../accounts/project-service.js';
import { SpendLimitService } from '../../billing/spend-limit-service.js';
import { OrganisationService } from '../../accounts/organisation-service.js';
import { RegistrationThrottle } from '../../accounts/registration-throttle.js';
import { SessionService } from '../../accounts/session-service.js';
import type { ModelPrices } from '../../billing/prices.js';
import { StripeTopups } from '../../billing/stripe-topups.js';
import { TierUpgrades } from '../../billing/tier-upgrades.js';
import type { ModelCatalog } from '../../catalog/model-catalog.js';
import type { CatalogEditor } from '../../config/catalog-editor.js';
import type { Config } from '../../config/load-config.js';
import { IdentityServices } from '../../identity/identity-services.js';
import { AccountDeletion } from '../../identity/account-deletion.js';
import { AccountSessions } from '../../identity/account-sessions.js';
import { EmailIdentity } from '../../identity/email-identity.js';
import { OrganisationInvitations } from '../../identity/organisation-invitations.js';
import { SsoProvisioning } from '../../identity/sso-provisioning.js';
import { DEFAULT_INVITATION_THROTTLE, InvitationThrottle } from '../../identity/mail-throttle.js';
import type { Mailer } from '../../identity/mailer.js';
import type { KeyService } from '../../keys/key-service.js';
import type { CredentialStatus } from '../../providers/credential-pool.js';
import type { ProviderRegistry } from '../../providers/registry.js';
import type { Storage } from '../../storage/types.js';
import type { DashboardDependencies, UpstreamCredentialStatus } from './dashboard-dependencies.js';

/** The dashboard API's services, from the gateway's storage and config. */
export function createDashboardDependencies(input: {
  storage: Storage;
  accounts: AccountService;
  keys: KeyService;
  catalog: ModelCatalog;
  config: Pick<
    Config,
    | 'tiers'
    | 'freeTokensPerDay'
    | 'stripe'
    | 'publicBaseUrl'
    | 'registrationsPerIp'
    | 'requireVerifiedEmail'
    | 'ssoProviders'
    | 'usageExport'
  >;
  /** An alert rule changed: its organisation's rules are evaluated soon. */
  onAlertRuleChanged?: (organisationId: string) => void;
  /** The SMTP mailer when SMTP_URL is set. */
  mailer?: Mailer | undefined;
  now: () => number;
  /** The gateway's own (it also renews periods); made from storage and config when absent. */
  tierUpgrades?: TierUpgrades;
  /** For the operator view of upstream credentials. */
  providers?: Pick<ProviderRegistry, 'credentialStatus'>;
  /** The gateway's audit log (the `/v1` API records to the same); made from storage when absent. */
  audit?: AuditLog;
  /** The catalog's prices, for the operator's reconcile. */
  pricesOf?: (modelId: string) => ModelPrices | undefined;
  /** Warnings about the configuration found while serving (an SSO provider provisioning into no organisation). */
  log?: (message: string, details: Record<string, unknown>) => void;
  catalogEditor?: CatalogEditor;
}): DashboardDependencies {
  const providers = input.providers;
  const { storage, config, now } = input;
  const sessions = new SessionService(storage.sessions, now);
  const audit = input.audit ?? new AuditLog(storage.audit, storage.organisations, now);
  const provisioning = new SsoProvisioning(storage.organisations, audit, now, input.log);
  const signInMethods = new IdentityServices(storage.identityFactors, {
    accounts: input.accounts,
    accountRepository: storage.accounts,
    ssoProviders: config.ssoProviders,
    now,
    afterSsoSignIn: async (account, claims, provider) =>
      (await provisioning.provision(provider, account, claims))[0]?.organisationId ?? null,
  });
  const accountDeletion = new AccountDeletion(storage.identity, now);
  accountDeletion.checks.push(async (account) => {
    // Members must not be left in an organisation no one can manage or pay for.
    const owned = await storage.organisations.soleOwnerships(account.id);
    if (owned.length === 0) return null;
    const names = owned.map((organisation) => `"${organisation.name}"`).join(', ');
    return `You are the only owner of ${names}, which has other members: make one of them an owner (or remove them) before deleting your account.`;
  });
  // Deleting an account removes its TOTP factor, recovery codes, passkeys, pending sign-in steps and SSO links.
  accountDeletion.signInMethodRemovers.push((accountId) => signInMethods.removeAll(accountId));
  const members = new OrganisationMembers(storage.organisations, now);
  accountDeletion.membershipRemovers.push((accountId) => members.leaveAll(accountId));
  return {
    accounts: input.accounts,
    accountRepository: storage.accounts,
    organisations: new OrganisationService(storage.organisations, now),
    projects: new ProjectService(storage.projects, now),
    spendLimits: new SpendLimitService(storage.spendLimits, storage.apiKeys, storage.projects, now),
    audit,
    signInAudit: new SignInAudit(audit, storage.organisations),
    receipts: storage.receipts,
    members,
    invitations: new OrganisationInvitations({
      invitations: storage.organisationInvitations,
      organisations: storage.organisations,
      identity: storage.identity,
      mailer: input.mailer,
      publicBaseUrl: config.publicBaseUrl,
      now,
      throttle: new InvitationThrottle(storage.loginFailures, DEFAULT_INVITATION_THROTTLE, now),
    }),
    keys: input.keys,
    sessions,
    signInMethods,
    emailIdentity: new EmailIdentity({
      accounts: storage.accounts,
      identity: storage.identity,
      sessions,
      throttleRows: storage.loginFailures,
      mailer: input.mailer,
      publicBaseUrl: config.publicBaseUrl,
      requireVerifiedEmail: config.requireVerifiedEmail,
      // A reset link proves the address, not the second factor: with one set up, the reset ends in its step.
      hasSecondFactor: async (accountId) => (await signInMethods.secondFactors(accountId)).length > 0,
      now,
    }),
    accountSessions: new AccountSessions(storage.identity, sessions),
    accountDeletion,
    loginThrottle: new LoginThrottle(storage.loginFailures, undefined, now),
    registrationThrottle: new RegistrationThrottle(storage.loginFailures, config.registrationsPerIp, now),
    billing: storage.billing,
    alertRules: new AlertRules({
      alerts: storage.alerts,
      allowHttpLoopback: config.usageExport.allowHttpLoopback,
      scopeExists: async (organisationId, scope, id) =>
        (scope === 'key'
          ? await storage.apiKeys.findById(organisationId, id)
          : await storage.projects.get(organisationId, id)) !== null,
      now,
      ...(input.onAlertRuleChanged === undefined ? {} : { onChange: input.onAlertRuleChanged }),
    }),
    alertHistory: storage.alerts,
    usage: storage.usage,
    usageExport: storage.usageExport,
    catalog: input.catalog,
    tiers: config.tiers,
    tierUpgrades: input.tierUpgrades ?? new TierUpgrades(storage.tierUpgrades, config.tiers, now),
    freeTokensPerDay: config.freeTokensPerDay,
    stripe:
      config.stripe === undefined
        ? undefined
        : new StripeTopups(config.stripe, storage.billing, storage.organisations, now),
    publicBaseUrl: config.publicBaseUrl,
    ...(providers === undefined ? {} : { upstreams: () => providers.credentialStatus().map(presentCredential) }),
    ...(input.pricesOf === undefined ? {} : { pricesOf: input.pricesOf }),
    ...(input.catalogEditor === undefined ? {} : { catalogEditor: input.catalogEditor }),
    now,
  };
}

/**
 * The pool's status in the contract's terms: epoch ms, and `probing` (cooldown over, the next answer decides)
 * shown as `cooling_down` with no end time, since it is not known healthy yet.
 */
function presentCredential(status: CredentialStatus): UpstreamCredentialStatus {
  return {
    vendor: status.vendor,
    label: status.label,
    baseUrl: status.baseUrl,
    state: status.state === 'healthy' ? 'healthy' : 'cooling_down',
    coolingDownUntil: status.coolingDownUntil === undefined ? null : Date.parse(status.coolingDownUntil),
    recentFailures: status.recentFailures,
    deployment: status.deployment ?? null,
    weight: status.weight,
    attempts: status.attempts,
    failures: status.failures,
    lastError:
      status.lastError === undefined ? null : { reason: status.lastError.reason, at: Date.parse(status.lastError.at) },
    meanLatencyMs: status.meanLatencyMs ?? null,
  };
}
