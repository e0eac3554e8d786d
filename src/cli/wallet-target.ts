import { AccountService } from '../accounts/account-service.js';
import { GatewayError } from '../canonical/errors.js';
import type { Storage } from '../storage/types.js';
import { UsageError } from './usage-error.js';

/** The wallet an operator command acts on: an organisation, named for the output by its person's email or its own name. */
export interface WalletTarget {
  organisationId: string;
  /** The person's email (`--email`), or the organisation's name and id (`--organisation`). */
  label: string;
  email: string | null;
}

/**
 * `--email E` names the person's personal organisation (it has the account's id, so it means what it did before
 * organisations paid); `--organisation ID` names any organisation. Exactly one of them.
 */
export async function walletTarget(
  storage: Storage,
  options: { email?: string | undefined; organisation?: string | undefined },
): Promise<WalletTarget> {
  const email = options.email?.trim() || undefined;
  const organisationId = options.organisation?.trim() || undefined;
  if (email !== undefined && organisationId !== undefined) {
    throw new UsageError('Give --email or --organisation, not both.');
  }
  if (organisationId !== undefined) {
    const organisation = await storage.organisations.findById(organisationId);
    if (organisation === null) {
      throw new GatewayError('not_found', `No organisation with id '${organisationId}'.`, { param: 'organisation' });
    }
    return { organisationId: organisation.id, label: `${organisation.name} (${organisation.id})`, email: null };
  }
  if (email === undefined) throw new UsageError('--email or --organisation is required.');
  const account = await new AccountService(storage.accounts).findByEmail(email);
  return { organisationId: account.id, label: account.email, email: account.email };
}
