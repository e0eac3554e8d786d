import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { IdentityError } from './identity-error.js';
import type { AccountTokenPurpose, AccountTokenRecord, IdentityRepository } from '../storage/identity-types.js';

/** How long a link works. A reset link is short-lived: it is as good as the password. */
export const LINK_LIFETIME_MS: Readonly<Record<AccountTokenPurpose, number>> = {
  verify_email: 48 * 3_600_000,
  reset_password: 3_600_000,
};

/** 256 random bits, base64url: 43 characters. */
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

export type LinkProblem = 'invalid' | 'used' | 'expired';

/** A link that cannot be used, and why, in words for the person who followed it. */
export class LinkRefusedError extends IdentityError {
  constructor(
    readonly problem: LinkProblem,
    /** The account the link was made for, when the link was found (used or expired): for the audit log. */
    readonly accountId: string | null = null,
  ) {
    super(
      400,
      problem === 'invalid' ? 'invalid_link' : problem === 'used' ? 'link_used' : 'link_expired',
      problem === 'used'
        ? 'This link was already used. Ask for a new one if you still need it.'
        : problem === 'expired'
          ? 'This link has expired. Ask for a new one.'
          : 'This link is not valid. Check that it was copied whole, or ask for a new one.',
      'token',
    );
    this.name = 'LinkRefusedError';
  }
}

/**
 * Single-use links for email verification and password reset. The token is 256 random bits: unguessable, so
 * it needs no signature of its own; storage keeps only its SHA-256 (a leaked table opens nothing), and a token
 * changed by even one character hashes to a row that does not exist. The row found by its hash is compared
 * once more in constant time before use, so the lookup's index is the only place timing could differ.
 */
export class AccountLinks {
  constructor(
    private readonly repository: IdentityRepository,
    private readonly now: () => number = Date.now,
  ) {}

  /** A new link token; earlier unused links of the same purpose for the account stop working. */
  async issue(purpose: AccountTokenPurpose, accountId: string, email: string): Promise<string> {
    const at = this.now();
    await this.repository.revokeTokens(accountId, purpose, at);
    const token = randomBytes(32).toString('base64url');
    await this.repository.createToken({
      idHash: hashLinkToken(token),
      purpose,
      accountId,
      email,
      createdAt: at,
      expiresAt: at + LINK_LIFETIME_MS[purpose],
    });
    return token;
  }

  /** The link's record when it may be used now (nothing is changed); throws LinkRefusedError otherwise. */
  async check(token: string, purpose: AccountTokenPurpose): Promise<AccountTokenRecord> {
    if (!TOKEN_PATTERN.test(token)) throw new LinkRefusedError('invalid');
    const idHash = hashLinkToken(token);
    const record = await this.repository.findToken(idHash);
    if (record === null || !sameHash(record.idHash, idHash) || record.purpose !== purpose)
      throw new LinkRefusedError('invalid');
    if (record.usedAt !== null) throw new LinkRefusedError('used', record.accountId);
    if (record.expiresAt <= this.now()) throw new LinkRefusedError('expired', record.accountId);
    return record;
  }

  /** Uses the link up (once); throws LinkRefusedError when it was used (or expired) meanwhile. */
  async consume(record: AccountTokenRecord): Promise<void> {
    const at = this.now();
    if (!(await this.repository.consumeToken(record.idHash, at)))
      throw new LinkRefusedError(record.expiresAt <= at ? 'expired' : 'used', record.accountId);
  }
}

export function hashLinkToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

function sameHash(a: string, b: string): boolean {
  const left = Buffer.from(a, 'utf8');
  const right = Buffer.from(b, 'utf8');
  return left.length === right.length && timingSafeEqual(left, right);
}
