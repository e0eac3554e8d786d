import { AccountService } from '../accounts/account-service.js';
import { SessionService } from '../accounts/session-service.js';
import { EmailIdentity } from '../identity/email-identity.js';
import type { AccountRecord, Storage } from '../storage/types.js';
import { UsageError } from './usage-error.js';

/**
 * What the operator does for a person when the gateway sends no mail (or the mail went missing), and for one who
 * lost every second factor.
 */
export const IDENTITY_USAGE = `  accounts verify-email --email E                mark the address verified (the operator vouches for it)
  accounts reset-link --email E                  print a one-hour, single-use password reset link to pass on
  accounts reset-2fa --email E                   remove the account's authenticator app, recovery codes and passkeys
                                                 (for someone who lost every second factor)
`;

const COMMANDS = new Set(['accounts verify-email', 'accounts reset-link', 'accounts reset-2fa']);

export function isIdentityCommand(command: string): boolean {
  return COMMANDS.has(command);
}

export interface IdentityCommandOutput {
  data: unknown;
  text: string;
}

export async function runIdentityCommand(
  command: string,
  storage: Storage,
  values: { email?: string | undefined },
  /** Where the link points: PUBLIC_BASE_URL, else the address a browser on this machine opens. */
  baseUrl: string,
): Promise<IdentityCommandOutput> {
  if (values.email === undefined || values.email === '') throw new UsageError('--email is required.');
  const account = await new AccountService(storage.accounts).findByEmail(values.email);
  if (command === 'accounts reset-2fa') return resetSecondFactors(storage, account);
  const identity = new EmailIdentity({
    accounts: storage.accounts,
    identity: storage.identity,
    sessions: new SessionService(storage.sessions),
    throttleRows: storage.loginFailures,
    mailer: undefined,
    publicBaseUrl: baseUrl,
    requireVerifiedEmail: false,
  });
  if (command === 'accounts verify-email') {
    await identity.operatorVerify(account.id);
    return {
      data: { id: account.id, email: account.email, email_verified: true },
      text: `${account.email} is verified.`,
    };
  }
  if (account.disabled) throw new UsageError(`${account.email} is disabled: enable it before issuing a reset link.`);
  const link = await identity.operatorResetLink(account);
  return {
    data: { id: account.id, email: account.email, url: link.url, expires_at: link.expiresAt },
    text: `${link.url}\n(single use, valid until ${new Date(link.expiresAt).toISOString()}: pass it to ${account.email} yourself)`,
  };
}

/**
 * `accounts reset-2fa`: the operator's way back in for a person who lost both the authenticator app and the
 * recovery codes. Only the second factors go; the password and sessions stay.
 */
async function resetSecondFactors(storage: Storage, account: AccountRecord): Promise<IdentityCommandOutput> {
  const totpRemoved = await storage.identityFactors.deleteTotp(account.id);
  const passkeysRemoved = await storage.identityFactors.deleteAllPasskeys(account.id);
  return {
    data: { id: account.id, email: account.email, totp_removed: totpRemoved, passkeys_removed: passkeysRemoved },
    text: `Second factors of ${account.email} removed (authenticator app: ${totpRemoved ? 'yes' : 'none set'}, passkeys: ${passkeysRemoved}). The password signs in alone until they set one up again.`,
  };
}
