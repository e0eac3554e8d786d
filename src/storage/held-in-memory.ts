import type { LockedAccount } from './billing-rules.js';

/**
 * What the live holds of an embedded (SQLite) gateway take, kept in its memory rather than in the database
 * (docs/decisions/0019-sqlite-holds-in-memory.md). Every reader of "reserved" on SQLite adds these to what the
 * database's counters still hold (those of holds a previous version wrote, until they are settled or swept).
 */
export interface HeldInMemory {
  /** The account's live holds, or undefined when it has none. */
  account(accountId: string): AccountHeld | undefined;
  /** What live holds take of a spend limit. */
  limitNano(limitId: string): bigint;
}

export interface AccountHeld {
  nano: bigint;
  /** Requests in flight holding money or free tokens. */
  holds: number;
  /** The latest free-allowance day of the account's holds, and the free tokens held on it. */
  freeDay: number;
  freeTokens: number;
}

/** The SQL functions an embedded gateway's connection answers from its memory (open-sqlite-storage.ts). */
export const ACCOUNT_HELD_SQL_FUNCTION = 'tollgate_account_held_nano';
export const LIMIT_HELD_SQL_FUNCTION = 'tollgate_limit_held_nano';

/**
 * The account as the money rules see it: the database's counters plus what live holds take. An admission of a new
 * day moves the free counters to that day without a write, so the account's free day is the later of the stored
 * one and its holds' latest; counters of an older day count as nothing (what the stored reset did before).
 */
export function withHeld(stored: LockedAccount, held: AccountHeld | undefined): LockedAccount {
  if (held === undefined) return stored;
  const freeDay = Math.max(stored.freeDay, held.freeDay);
  const storedOnDay = stored.freeDay === freeDay;
  return {
    balance: stored.balance,
    reserved: stored.reserved + held.nano,
    freeDay,
    freeUsed: storedOnDay ? stored.freeUsed : 0,
    freeReserved: (storedOnDay ? stored.freeReserved : 0) + (held.freeDay === freeDay ? held.freeTokens : 0),
  };
}
