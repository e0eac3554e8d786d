import { AccountService } from '../accounts/account-service.js';
import { SessionService } from '../accounts/session-service.js';
import { EmailIdentity } from '../identity/email-identity.js';
import type { Storage } from '../storage/types.js';
import { UsageError } from './usage-error.js';

/** What the operator does for a person when the gateway sends no mail (or the mail went missing). */
export const IDENTITY_USAGE = `  accounts verify-email --email E                mark the address verified (the operator vouches for it)
  accounts reset-link --email E                  print a one-hour, single-use password reset link to pass on
`;

export function isIdentityCommand(command: string): boolean {
  return command === 'accounts verify-email' || command === 'accounts reset-link';
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
