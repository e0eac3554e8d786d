import { createHash, randomBytes } from 'node:crypto';
import type { IdentityChallenge, IdentityFactorRepository } from '../storage/identity-factor-types.js';

/** What a challenge is for; a token of one kind is never accepted as another. */
export type ChallengeKind = 'second_factor' | 'passkey_sign_in' | 'passkey_register' | 'sso';

/** How long each step may take: a second factor is typed within minutes; an SSO round trip may need a password. */
const LIFETIME_MS: Record<ChallengeKind, number> = {
  second_factor: 5 * 60_000,
  passkey_sign_in: 5 * 60_000,
  passkey_register: 5 * 60_000,
  sso: 10 * 60_000,
};
/** Wrong second-factor codes allowed per pending sign-in; then the password must be entered again. */
export const MAX_CHALLENGE_ATTEMPTS = 5;

const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

export interface IssuedChallenge {
  token: string;
  expiresAt: number;
}

/**
 * Short-lived, single-use steps of a sign-in or an enrolment, stored in the database (they work on every
 * instance) under the SHA-256 of a random 256-bit token: a pending second factor is not a session, and a leaked
 * table holds nothing anyone can present.
 */
export class SignInChallenges {
  constructor(
    private readonly store: IdentityFactorRepository,
    private readonly now: () => number = Date.now,
  ) {}

  async issue(kind: ChallengeKind, accountId: string | null, payload: unknown): Promise<IssuedChallenge> {
    const token = randomBytes(32).toString('base64url');
    const at = this.now();
    const expiresAt = at + LIFETIME_MS[kind];
    // Opportunistic clean-up, as sessions do on login.
    await this.store.deleteExpiredChallenges(at);
    await this.store.createChallenge({
      idHash: hashChallengeToken(token),
      kind,
      accountId,
      payload: JSON.stringify(payload ?? null),
      expiresAt,
    });
    return { token, expiresAt };
  }

  /** The live challenge of that kind behind the token, or null (unknown, expired, or spent). */
  async find(kind: ChallengeKind, token: string | undefined): Promise<IdentityChallenge | null> {
    if (token === undefined || !TOKEN_PATTERN.test(token)) return null;
    return this.store.findChallenge(hashChallengeToken(token), kind, this.now());
  }

  /** Counts a failed attempt; past the limit the challenge is spent. Returns whether it may still be used. */
  async fail(challenge: IdentityChallenge): Promise<boolean> {
    const attempts = await this.store.failChallenge(challenge.idHash);
    if (attempts < MAX_CHALLENGE_ATTEMPTS) return true;
    await this.store.consumeChallenge(challenge.idHash);
    return false;
  }

  /** Spends the challenge: true for exactly one caller. */
  consume(challenge: IdentityChallenge): Promise<boolean> {
    return this.store.consumeChallenge(challenge.idHash);
  }
}

export function hashChallengeToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}
