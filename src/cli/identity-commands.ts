import { AccountService } from '../accounts/account-service.js';
import type { Storage } from '../storage/types.js';

export const IDENTITY_USAGE = `  accounts reset-2fa --email E                   remove the account's authenticator app, recovery codes and passkeys
                                                 (for someone who lost every second factor)
`;

/**
 * `accounts reset-2fa`: the operator's way back in for a person who lost both the authenticator app and the
 * recovery codes. Only the second factors go; the password and sessions stay.
 */
export async function resetSecondFactors(
  storage: Storage,
  email: string,
): Promise<{ id: string; email: string; totpRemoved: boolean; passkeysRemoved: number }> {
  const account = await new AccountService(storage.accounts).findByEmail(email);
  const totpRemoved = await storage.identityFactors.deleteTotp(account.id);
  const passkeysRemoved = await storage.identityFactors.deleteAllPasskeys(account.id);
  return { id: account.id, email: account.email, totpRemoved, passkeysRemoved };
}
