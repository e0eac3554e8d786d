import { randomUUID } from 'node:crypto';
import { GatewayError, invalidRequest } from '../canonical/errors.js';
import { DuplicateEmailError, type AccountRecord, type AccountRepository, type AccountRole } from '../storage/types.js';
import { hashPassword, verifyPassword } from './password.js';
import { passwordRuleViolation } from './password-rules.js';

export { PASSWORD_MIN_LENGTH } from './password-rules.js';
// No spaces and no control characters (PostgreSQL cannot even store U+0000).
const EMAIL_PATTERN = /^[^\s@\p{Cc}]+@[^\s@\p{Cc}]+\.[^\s@\p{Cc}]+$/u;

export interface CreateAccountInput {
  email: string;
  password: string;
  role?: AccountRole;
}

export class AccountService {
  constructor(
    private readonly accounts: AccountRepository,
    private readonly now: () => number = Date.now,
  ) {}

  async create(input: CreateAccountInput): Promise<AccountRecord> {
    const email = input.email.trim();
    if (!EMAIL_PATTERN.test(email) || email.length > 254)
      throw invalidRequest(`'${input.email}' is not a valid email address.`, 'email');
    const violation = passwordRuleViolation(input.password, email);
    if (violation !== null) throw violation;
    try {
      return await this.accounts.create({
        id: `acct_${randomUUID().replaceAll('-', '')}`,
        email,
        passwordHash: await hashPassword(input.password),
        role: input.role ?? 'user',
        tier: 'standard',
        createdAt: this.now(),
      });
    } catch (error) {
      if (error instanceof DuplicateEmailError) throw new GatewayError('conflict', error.message, { param: 'email' });
      throw error;
    }
  }

  /**
   * Sets the tier as given (and as the operator's tier). Takes effect on the account's next request: authentication
   * reads the tier every time. The CLI and the operator view go through TierUpgrades.grant instead, which keeps a
   * higher tier the account bought or reached by payments.
   */
  async setTier(email: string, tier: string, tiers: Readonly<Record<string, unknown>>): Promise<AccountRecord> {
    if (!Object.hasOwn(tiers, tier)) {
      throw invalidRequest(`Unknown tier '${tier}'. Tiers: ${Object.keys(tiers).join(', ')}.`, 'tier');
    }
    const account = await this.findByEmail(email);
    await this.accounts.setTier(account.id, tier);
    return { ...account, tier };
  }

  /**
   * The account whose email and password these are, or null. Unknown emails cost the same scrypt work as
   * known ones, so the answer's timing does not tell which emails have accounts.
   */
  async verifyCredentials(email: string, password: string): Promise<AccountRecord | null> {
    const account = await this.accounts.findByEmail(email.trim());
    const valid = await verifyPassword(password, account?.passwordHash ?? (await dummyHash()));
    return account !== null && valid ? account : null;
  }

  /** Checks the current password, applies the rules to the new one and stores its hash. */
  async changePassword(account: AccountRecord, currentPassword: string, newPassword: string): Promise<void> {
    if (!(await verifyPassword(currentPassword, account.passwordHash))) {
      throw invalidRequest('The current password is not correct.', 'currentPassword');
    }
    const violation = passwordRuleViolation(newPassword, account.email, 'newPassword');
    if (violation !== null) throw violation;
    await this.accounts.setPasswordHash(account.id, await hashPassword(newPassword));
  }

  async findById(id: string): Promise<AccountRecord> {
    const account = await this.accounts.findById(id);
    if (account === null) throw new GatewayError('not_found', `No account with id '${id}'.`, { param: 'id' });
    return account;
  }

  /** Takes effect on the account's next request: key authentication reads `disabled` every time. */
  async setDisabled(id: string, disabled: boolean): Promise<AccountRecord> {
    const account = await this.findById(id);
    await this.accounts.setDisabled(id, disabled);
    return { ...account, disabled };
  }

  async setTierById(id: string, tier: string, tiers: Readonly<Record<string, unknown>>): Promise<AccountRecord> {
    const account = await this.findById(id);
    return this.setTier(account.email, tier, tiers);
  }

  async findByEmail(email: string): Promise<AccountRecord> {
    const account = await this.accounts.findByEmail(email.trim());
    if (account === null) throw new GatewayError('not_found', `No account with email ${email}.`, { param: 'email' });
    return account;
  }
}

let dummy: Promise<string> | undefined;

/** A real hash of a random password, made once: verifying against it costs what a real check costs. */
function dummyHash(): Promise<string> {
  dummy ??= hashPassword(randomUUID());
  return dummy;
}
