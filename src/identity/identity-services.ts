import type { AccountService } from '../accounts/account-service.js';
import type { SsoProviderSettings } from '../config/sso-settings.js';
import type { IdentityFactorRepository } from '../storage/identity-factor-types.js';
import type { AccountRepository } from '../storage/types.js';
import { Passkeys } from './passkeys.js';
import { SignInChallenges } from './sign-in-challenges.js';
import { SsoSignIn, type SsoSignInHook } from './sso-sign-in.js';
import { TotpFactor } from './totp-factor.js';

export type SecondFactorMethod = 'totp' | 'recovery_code' | 'passkey';

/** Second factors, passkeys and single sign-on, built from storage and the SSO settings. */
export class IdentityServices {
  readonly challenges: SignInChallenges;
  readonly totp: TotpFactor;
  readonly passkeys: Passkeys;
  readonly sso: SsoSignIn;

  constructor(
    private readonly store: IdentityFactorRepository,
    input: {
      accounts: AccountService;
      accountRepository: AccountRepository;
      ssoProviders: readonly SsoProviderSettings[];
      now: () => number;
      /** The name authenticator apps show beside the code. */
      issuer?: string;
      afterSsoSignIn?: SsoSignInHook;
    },
  ) {
    this.challenges = new SignInChallenges(store, input.now);
    this.totp = new TotpFactor(store, input.issuer ?? 'Tollgate', input.now);
    this.passkeys = new Passkeys(store, this.challenges, input.now);
    this.sso = new SsoSignIn(input.ssoProviders, {
      accounts: input.accounts,
      accountRepository: input.accountRepository,
      store,
      challenges: this.challenges,
      now: input.now,
      ...(input.afterSsoSignIn === undefined ? {} : { afterSignIn: input.afterSsoSignIn }),
    });
  }

  /** The second factors the account has set up; empty means the password alone signs in. */
  async secondFactors(accountId: string): Promise<SecondFactorMethod[]> {
    const [totpOn, passkeys] = await Promise.all([this.totp.isOn(accountId), this.store.listPasskeys(accountId)]);
    const methods: SecondFactorMethod[] = [];
    if (totpOn) methods.push('totp', 'recovery_code');
    if (passkeys.length > 0) methods.push('passkey');
    return methods;
  }

  /** The operator's way out for a person who lost every factor: TOTP, recovery codes and passkeys removed. */
  async resetSecondFactors(accountId: string): Promise<{ totp: boolean; passkeys: number }> {
    const totp = await this.store.deleteTotp(accountId);
    const passkeys = await this.store.deleteAllPasskeys(accountId);
    return { totp, passkeys };
  }

  /** At account deletion: every factor, passkey, pending sign-in step and SSO link of the account. */
  async removeAll(accountId: string): Promise<void> {
    await this.store.deleteAllForAccount(accountId);
  }
}
