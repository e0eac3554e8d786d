import { verifyPassword } from '../accounts/password.js';
import { invalidRequest } from '../canonical/errors.js';
import type { IdentityRepository } from '../storage/identity-types.js';
import type { AccountRecord } from '../storage/types.js';
import { IdentityError } from './identity-error.js';

/**
 * Asked before an account is deleted: a sentence saying why it may not be, or null. Organisations will add
 * theirs here ("it would leave an organisation without an owner") when they exist.
 */
export type DeletionCheck = (account: AccountRecord) => Promise<string | null>;

/**
 * Removes what a sign-in method stores for an account (second factors, linked OpenID Connect identities):
 * each such method adds its remover here, and deletion runs them all.
 */
export type SignInMethodRemover = (accountId: string) => Promise<void>;

/**
 * A person deletes their own account (password re-entered). Personal data goes: the email becomes a tombstone
 * (`deleted-<id>@deleted.invalid`, so the unique index stays happy and the address is free for a new account),
 * the password hash, sessions, outstanding links and every sign-in method are removed, and the keys are revoked.
 * Ledger, usage and balance rows stay, attributed to the deleted account, so the books still add up.
 */
export class AccountDeletion {
  readonly checks: DeletionCheck[] = [];
  readonly signInMethodRemovers: SignInMethodRemover[] = [];
  /** Takes the account out of other people's organisations (revoking the keys it made there), once the checks pass. */
  readonly membershipRemovers: SignInMethodRemover[] = [];

  constructor(
    private readonly identity: IdentityRepository,
    private readonly now: () => number = Date.now,
  ) {
    this.checks.push((account) => this.lastAdminCheck(account));
  }

  async delete(account: AccountRecord, password: string): Promise<void> {
    if (!(await verifyPassword(password, account.passwordHash)))
      throw invalidRequest('The password is not correct.', 'password');
    for (const check of this.checks) {
      const refusal = await check(account);
      if (refusal !== null) throw new IdentityError(409, 'deletion_refused', refusal);
    }
    for (const remove of this.signInMethodRemovers) await remove(account.id);
    for (const remove of this.membershipRemovers) await remove(account.id);
    await this.identity.deleteAccount(account.id, deletedEmail(account.id), this.now());
  }

  private async lastAdminCheck(account: AccountRecord): Promise<string | null> {
    if (account.role !== 'admin') return null;
    if ((await this.identity.countOtherActiveAdmins(account.id)) > 0) return null;
    return 'You are the last operator (admin) of this gateway: make another account an admin before deleting this one.';
  }
}

/** `.invalid` is reserved (RFC 2606): no mail can ever be delivered to a tombstone. */
export function deletedEmail(accountId: string): string {
  return `deleted-${accountId}@deleted.invalid`;
}
