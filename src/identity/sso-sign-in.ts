import { randomBytes } from 'node:crypto';
import type * as oidc from 'openid-client';
import type { AccountService } from '../accounts/account-service.js';
import type { SsoProviderSettings } from '../config/sso-settings.js';
import type { AccountRecord, AccountRepository, AccountRole } from '../storage/types.js';
import type { IdentityFactorRepository } from '../storage/identity-factor-types.js';
import type { SignInChallenges } from './sign-in-challenges.js';

const SCOPE = 'openid email profile';

/** A refused single sign-on, with the sentence shown on the sign-in page. */
export class SsoRefusedError extends Error {
  constructor(
    readonly reason: string,
    message: string,
    /** The account concerned, when the refusal came after the person was known (disabled, domain). */
    readonly accountId: string | null = null,
    /** For `token_rejected`: which check of the ID token failed (`nonce`, `audience`, `issuer`, `signature`). */
    readonly check?: string,
  ) {
    super(message);
    this.name = 'SsoRefusedError';
  }
}

export interface SsoStart {
  /** Where to send the browser: the provider's authorisation endpoint. */
  authorizationUrl: string;
  /** The `state` value, also set in a cookie so only the browser that started the flow may finish it. */
  state: string;
}

export interface SsoResult {
  account: AccountRecord;
  /** A path inside the gateway (checked when the flow started). */
  returnTo: string;
  provisioned: boolean;
  /** The provider's id (the session records it: an organisation may require it). */
  provider: string;
  /** The organisation the provider made the person a member of, for the session to work in; null: none. */
  organisationId: string | null;
}

/**
 * Called after every SSO sign-in with the verified ID-token claims; returns the organisation the session should
 * work in (the one it provisioned into), or null.
 */
export type SsoSignInHook = (
  account: AccountRecord,
  claims: Readonly<Record<string, unknown>>,
  provider: SsoProviderSettings,
) => Promise<string | null>;

interface FlowPayload {
  provider: string;
  nonce: string;
  verifier: string;
  redirectUri: string;
  returnTo: string;
}

/**
 * Dashboard sign-in through OpenID Connect providers (openid-client): discovery, the authorisation code flow with
 * PKCE (S256), `state` and `nonce`, the ID token's signature, issuer, audience and expiry verified by the library.
 * A person is provisioned on first sign-in; an existing account is linked only when the provider asserts the
 * email is verified, so a provider that lets anyone claim any address cannot take over an account.
 */
export class SsoSignIn {
  private readonly configurations = new Map<string, Promise<oidc.Configuration>>();

  constructor(
    private readonly providers: readonly SsoProviderSettings[],
    private readonly deps: {
      accounts: AccountService;
      accountRepository: AccountRepository;
      store: IdentityFactorRepository;
      challenges: SignInChallenges;
      now: () => number;
      afterSignIn?: SsoSignInHook;
    },
  ) {}

  list(): Array<{ id: string; name: string }> {
    return this.providers.map((provider) => ({ id: provider.id, name: provider.name }));
  }

  /** The provider's settings (its provisioning included); undefined for an unknown id. */
  settings(id: string): SsoProviderSettings | undefined {
    return this.providers.find((candidate) => candidate.id === id);
  }

  /** The provider that password sign-in must give way to for this email, if any. */
  requiredFor(email: string): { id: string; name: string } | undefined {
    const domain = emailDomain(email);
    const provider = this.providers.find((candidate) => candidate.requiredForDomains.includes(domain));
    return provider === undefined ? undefined : { id: provider.id, name: provider.name };
  }

  async start(providerId: string, redirectUri: string, returnTo: string): Promise<SsoStart> {
    const provider = this.provider(providerId);
    const configuration = await this.configuration(provider);
    const oidc = await openIdClient();
    const verifier = oidc.randomPKCECodeVerifier();
    const nonce = oidc.randomNonce();
    const payload: FlowPayload = { provider: provider.id, nonce, verifier, redirectUri, returnTo };
    const { token: state } = await this.deps.challenges.issue('sso', null, payload);
    const url = oidc.buildAuthorizationUrl(configuration, {
      redirect_uri: redirectUri,
      scope: SCOPE,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    return { authorizationUrl: url.href, state };
  }

  /**
   * Finishes the flow at the callback: `currentUrl` is the callback URL as the browser requested it, and
   * `cookieState` the state this browser was given when it started. Throws SsoRefusedError when anything fails.
   */
  async finish(providerId: string, currentUrl: URL, cookieState: string | undefined): Promise<SsoResult> {
    const provider = this.provider(providerId);
    const state = currentUrl.searchParams.get('state') ?? undefined;
    if (state === undefined || cookieState === undefined || state !== cookieState) {
      throw new SsoRefusedError('state_mismatch', 'The sign-in could not be matched to this browser. Start it again.');
    }
    const challenge = await this.deps.challenges.find('sso', state);
    if (challenge === null || !(await this.deps.challenges.consume(challenge))) {
      throw new SsoRefusedError('state_unknown', 'This sign-in link expired or was used already. Start it again.');
    }
    const flow = JSON.parse(challenge.payload) as FlowPayload;
    if (flow.provider !== provider.id) {
      throw new SsoRefusedError('state_mismatch', 'The sign-in could not be matched to this provider. Start it again.');
    }
    const providerError = currentUrl.searchParams.get('error');
    if (providerError !== null) {
      throw new SsoRefusedError(
        'provider_error',
        `${provider.name} refused the sign-in (${providerError.slice(0, 100)}).`,
      );
    }
    const configuration = await this.configuration(provider);
    // The callback's own URL, rebuilt on the registered redirect URI: the library compares the two.
    const callback = new URL(flow.redirectUri);
    callback.search = currentUrl.search;
    let claims: oidc.IDToken;
    try {
      const { authorizationCodeGrant } = await openIdClient();
      const tokens = await authorizationCodeGrant(configuration, callback, {
        pkceCodeVerifier: flow.verifier,
        expectedState: state,
        expectedNonce: flow.nonce,
        idTokenExpected: true,
      });
      const idClaims = tokens.claims();
      if (idClaims === undefined) throw new Error('no ID token');
      claims = idClaims;
    } catch (error) {
      throw new SsoRefusedError(
        'token_rejected',
        `The answer from ${provider.name} could not be verified (${describe(error)}). Nothing was changed.`,
        null,
        failedCheck(error),
      );
    }
    return this.signIn(provider, claims, flow.returnTo);
  }

  private async signIn(provider: SsoProviderSettings, claims: oidc.IDToken, returnTo: string): Promise<SsoResult> {
    const email = typeof claims.email === 'string' ? claims.email.trim() : undefined;
    const emailVerified = claims.email_verified === true;
    if (
      email !== undefined &&
      provider.allowedDomains.length > 0 &&
      !provider.allowedDomains.includes(emailDomain(email))
    ) {
      throw new SsoRefusedError(
        'domain_not_allowed',
        `${provider.name} accounts of this email domain may not sign in here.`,
      );
    }
    const role = this.roleOf(provider, claims);
    let account: AccountRecord | null = null;
    let provisioned = false;
    const linked = await this.deps.store.findSsoAccount(provider.id, claims.sub);
    if (linked !== null) {
      account = await this.deps.accountRepository.findById(linked);
    } else {
      if (email === undefined) {
        throw new SsoRefusedError('no_email', `${provider.name} did not share an email address for this account.`);
      }
      const existing = await this.deps.accountRepository.findByEmail(email);
      if (existing !== null) {
        if (!emailVerified) {
          throw new SsoRefusedError(
            'email_not_verified',
            `An account with this email exists, and ${provider.name} does not say the email is verified: sign in with your password instead.`,
          );
        }
        account = existing;
      } else {
        if (claims.email_verified === false) {
          throw new SsoRefusedError('email_not_verified', `${provider.name} says this email is not verified.`);
        }
        // No password of its own: a random one nobody knows (SSO is how this person signs in).
        account = await this.deps.accounts.create({
          email,
          password: randomBytes(32).toString('base64url'),
          role: role ?? 'user',
        });
        provisioned = true;
      }
      await this.deps.store.linkSso(provider.id, claims.sub, account.id, this.deps.now());
    }
    if (account === null) throw new SsoRefusedError('account_missing', 'The linked account no longer exists.');
    if (account.disabled) {
      throw new SsoRefusedError(
        'account_disabled',
        'This account is disabled. Ask the operator of this gateway to enable it again.',
        account.id,
      );
    }
    if (role !== undefined && role !== account.role) {
      await this.deps.store.setRole(account.id, role);
      account = { ...account, role };
    }
    const organisationId = (await this.deps.afterSignIn?.(account, claims, provider)) ?? null;
    return { account, returnTo, provisioned, provider: provider.id, organisationId };
  }

  /** The role the provider's claim maps to, or undefined when the provider maps none. */
  private roleOf(provider: SsoProviderSettings, claims: oidc.IDToken): AccountRole | undefined {
    if (provider.roleClaim === undefined) return undefined;
    const value = claims[provider.roleClaim];
    const values = Array.isArray(value) ? value : [value];
    return values.some((item) => typeof item === 'string' && provider.adminValues.includes(item)) ? 'admin' : 'user';
  }

  private provider(id: string): SsoProviderSettings {
    const provider = this.providers.find((candidate) => candidate.id === id);
    if (provider === undefined)
      throw new SsoRefusedError('unknown_provider', `No sign-in provider '${id.slice(0, 40)}'.`);
    return provider;
  }

  /** Discovery once per provider; a failed discovery is forgotten so the next sign-in tries again. */
  private configuration(provider: SsoProviderSettings): Promise<oidc.Configuration> {
    let pending = this.configurations.get(provider.id);
    if (pending === undefined) {
      const issuer = new URL(provider.issuer);
      pending = openIdClient()
        .then((oidc) =>
          oidc.discovery(issuer, provider.clientId, provider.clientSecret, undefined, {
            execute: [
              // The ID token's signature is checked too: OpenID Connect lets a client skip it for a token fetched
              // from the token endpoint over TLS, and openid-client does unless told otherwise.
              oidc.enableNonRepudiationChecks,
              // The settings allow plain http only for an issuer on loopback (a provider on the same machine).
              ...(issuer.protocol === 'http:' ? [oidc.allowInsecureRequests] : []),
            ],
          }),
        )
        .catch((error: unknown) => {
          this.configurations.delete(provider.id);
          throw new SsoRefusedError(
            'discovery_failed',
            `${provider.name} could not be reached (${describe(error)}). Try again later.`,
          );
        });
      this.configurations.set(provider.id, pending);
    }
    return pending;
  }
}

/**
 * openid-client (with jose and oauth4webapi) is loaded by the first SSO sign-in, not at start-up: most gateways
 * configure no provider, and the modules would sit in every process's heap. Node caches the loaded module.
 */
function openIdClient(): Promise<typeof oidc> {
  return import('openid-client');
}

function emailDomain(email: string): string {
  return email.slice(email.lastIndexOf('@') + 1).toLowerCase();
}

/**
 * The library's reason: openid-client wraps the check that failed, so the chain of causes is walked for the most
 * specific message and the ID-token claim it names.
 */
function describe(error: unknown): string {
  let message = error instanceof Error ? error.message : String(error);
  let claim: string | undefined;
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    if (depth > 0) message = current.message;
    const cause: unknown = current.cause;
    if (cause !== null && typeof cause === 'object' && 'claim' in cause && typeof cause.claim === 'string')
      claim ??= cause.claim;
    current = cause;
  }
  return `${claim === undefined ? '' : `the ID token's "${claim}" claim: `}${message}`.slice(0, 200);
}

/** Which check of the ID token failed, from openid-client's error chain: for the audit log's reason. */
function failedCheck(error: unknown): string {
  const text = describe(error).toLowerCase();
  if (text.includes('"nonce"')) return 'nonce';
  if (text.includes('"aud"')) return 'audience';
  if (text.includes('"iss"')) return 'issuer';
  if (text.includes('signature')) return 'signature';
  return 'other';
}

/**
 * Whether a return path stays inside the gateway: a path of its own origin, never `//host` or `/\host` (which
 * browsers read as another host) nor an absolute URL.
 */
export function isInternalPath(path: string): boolean {
  if (!path.startsWith('/') || path.startsWith('//') || path.startsWith('/\\')) return false;
  if (/[\p{Cc}\\]/u.test(path) || path.length > 500) return false;
  const base = 'http://gateway.invalid';
  try {
    return new URL(path, base).origin === base;
  } catch {
    return false;
  }
}
