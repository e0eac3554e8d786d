/**
 * Record types of second factors and single sign-on (0014-identity-factors). Their tables are typed here, not in
 * database-schema.ts: the repository widens the shared Kysely instance with them (`withTables`).
 */

export interface TotpFactorsTable {
  account_id: string;
  secret: string;
  confirmed_at: number | null;
  last_step: number;
  created_at: number;
}

export interface RecoveryCodesTable {
  code_hash: string;
  account_id: string;
  used_at: number | null;
}

export interface PasskeysTable {
  id: string;
  account_id: string;
  public_key: string;
  counter: number;
  transports: string;
  name: string;
  created_at: number;
  last_used_at: number | null;
}

export interface IdentityChallengesTable {
  id_hash: string;
  kind: string;
  account_id: string | null;
  payload: string;
  attempts: number;
  expires_at: number;
}

export interface SsoIdentitiesTable {
  provider: string;
  subject: string;
  account_id: string;
  created_at: number;
}

// A type alias, not an interface: Kysely's `withTables` needs the implicit index signature only aliases have.
export type IdentityFactorTables = {
  totp_factors: TotpFactorsTable;
  recovery_codes: RecoveryCodesTable;
  passkeys: PasskeysTable;
  identity_challenges: IdentityChallengesTable;
  sso_identities: SsoIdentitiesTable;
};

export interface TotpFactor {
  accountId: string;
  /** Base32, as authenticator apps take it. Never leaves the gateway after enrolment. */
  secret: string;
  confirmedAt: number | null;
  lastStep: number;
  createdAt: number;
}

export interface Passkey {
  id: string;
  accountId: string;
  /** COSE public key, base64url. */
  publicKey: string;
  counter: number;
  transports: string[];
  name: string;
  createdAt: number;
  lastUsedAt: number | null;
}

/** A short-lived step of a sign-in or enrolment, found by the SHA-256 of the token its holder presents. */
export interface IdentityChallenge {
  idHash: string;
  kind: string;
  accountId: string | null;
  payload: string;
  attempts: number;
  expiresAt: number;
}

export interface IdentityFactorRepository {
  /** Replaces any unconfirmed factor; refuses (false) when a confirmed one exists. */
  saveTotpDraft(accountId: string, secret: string, at: number): Promise<boolean>;
  findTotp(accountId: string): Promise<TotpFactor | null>;
  /**
   * Accepts `step` only if it is later than the last accepted one, atomically: two requests racing with the same
   * code cannot both pass. Returns whether this call accepted it.
   */
  acceptTotpStep(accountId: string, step: number): Promise<boolean>;
  confirmTotp(accountId: string, at: number): Promise<void>;
  /** Removes the TOTP factor and every recovery code. */
  deleteTotp(accountId: string): Promise<boolean>;

  /** Replaces the account's recovery codes with these hashes. */
  replaceRecoveryCodes(accountId: string, codeHashes: readonly string[]): Promise<void>;
  /** Marks the code used if it is the account's and unused; true once per code. */
  spendRecoveryCode(accountId: string, codeHash: string, at: number): Promise<boolean>;
  countUnusedRecoveryCodes(accountId: string): Promise<number>;

  addPasskey(passkey: Passkey): Promise<void>;
  listPasskeys(accountId: string): Promise<Passkey[]>;
  findPasskey(id: string): Promise<Passkey | null>;
  /** Stores the authenticator's new signature counter after a sign-in. */
  touchPasskey(id: string, counter: number, at: number): Promise<void>;
  renamePasskey(accountId: string, id: string, name: string): Promise<boolean>;
  deletePasskey(accountId: string, id: string): Promise<boolean>;
  deleteAllPasskeys(accountId: string): Promise<number>;

  createChallenge(challenge: Omit<IdentityChallenge, 'attempts'>): Promise<void>;
  findChallenge(idHash: string, kind: string, at: number): Promise<IdentityChallenge | null>;
  /** Counts a failed attempt; returns the new count. */
  failChallenge(idHash: string): Promise<number>;
  /** Deletes the challenge; true only for the caller that deleted it (single use under races). */
  consumeChallenge(idHash: string): Promise<boolean>;
  deleteExpiredChallenges(at: number): Promise<void>;

  findSsoAccount(provider: string, subject: string): Promise<string | null>;
  linkSso(provider: string, subject: string, accountId: string, at: number): Promise<void>;
  /** The role an SSO provider's claim maps to, applied at each of its sign-ins. */
  setRole(accountId: string, role: 'user' | 'admin'): Promise<void>;

  /**
   * Account deletion: its TOTP factor, recovery codes, passkeys, challenges and SSO links, in one transaction. A
   * later sign-in through the same provider subject provisions a new account.
   */
  deleteAllForAccount(accountId: string): Promise<void>;
}
