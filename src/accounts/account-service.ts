import { randomUUID } from 'node:crypto';
import { GatewayError, invalidRequest } from '../canonical/errors.js';
import { DuplicateEmailError, type AccountRecord, type AccountRepository, type AccountRole } from '../storage/types.js';
import { hashPassword } from './password.js';

export const PASSWORD_MIN_LENGTH = 10;
const EMAIL_PATTERN = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

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
    if (!EMAIL_PATTERN.test(email) || email.length > 254) throw invalidRequest(`'${input.email}' is not a valid email address.`, 'email');
    if (input.password.length < PASSWORD_MIN_LENGTH) {
      throw invalidRequest(`The password must have at least ${PASSWORD_MIN_LENGTH} characters.`, 'password');
    }
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

  /** Takes effect on the account's next request: authentication reads the tier every time. */
  async setTier(email: string, tier: string, tiers: Readonly<Record<string, unknown>>): Promise<AccountRecord> {
    if (!Object.hasOwn(tiers, tier)) {
      throw invalidRequest(`Unknown tier '${tier}'. Tiers: ${Object.keys(tiers).join(', ')}.`, 'tier');
    }
    const account = await this.findByEmail(email);
    await this.accounts.setTier(account.id, tier);
    return { ...account, tier };
  }

  async findByEmail(email: string): Promise<AccountRecord> {
    const account = await this.accounts.findByEmail(email.trim());
    if (account === null) throw new GatewayError('not_found', `No account with email ${email}.`, { param: 'email' });
    return account;
  }
}
