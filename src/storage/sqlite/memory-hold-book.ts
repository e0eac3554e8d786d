import type { HoldCheckpoint } from '../billing-types.js';
import type { AccountHeld, HeldInMemory } from '../held-in-memory.js';

/** One request's live hold, as admission and its slices took it. */
export interface MemoryHold {
  accountId: string;
  apiKeyId: string;
  holdNano: bigint;
  freeTokens: number;
  /** The free-allowance day its free tokens were taken from. */
  freeDay: number;
  maxOutputTokens: number;
  createdAt: number;
  expiresAt: number;
  /** What it holds on each spend limit over it, by limit id. */
  limits: Map<string, bigint>;
  /** Its latest checkpoint, written or not: what an expiry here bills. */
  checkpoint?: HoldCheckpoint;
  /**
   * Whether a checkpoint row of it may be in `reservations` (a write was run, committed or not): without one its
   * settlement has no row to delete.
   */
  checkpointStored?: boolean;
}

/** What one slice adds to a hold. */
export interface HoldGrowth {
  holdNano: bigint;
  freeTokens: number;
  tokens: number;
  expiresAt: number;
  /** The limits the slice's money counts against (all those over the request). */
  limitIds: readonly string[];
  checkpoint?: HoldCheckpoint;
}

interface AccountSums {
  nano: bigint;
  holds: number;
  /** Per free day of the account's holds: how many, and the free tokens they took of that day. */
  days: Map<number, { holds: number; freeTokens: number }>;
}

/**
 * The live holds' book of an embedded gateway (docs/decisions/0019-sqlite-holds-in-memory.md): each request's hold
 * and their sums per organisation and per spend limit. One process owns the database file, so nothing else needs to
 * see them, and a crash loses nothing the checkpoints do not cover. The billing store changes it only in synchronous
 * steps; settlement releases a hold only once its write has committed.
 */
export class MemoryHoldBook implements HeldInMemory {
  private readonly holds = new Map<string, MemoryHold>();
  private readonly accounts = new Map<string, AccountSums>();
  private readonly limits = new Map<string, bigint>();

  get size(): number {
    return this.holds.size;
  }

  get(requestId: string): MemoryHold | undefined {
    return this.holds.get(requestId);
  }

  has(requestId: string): boolean {
    return this.holds.has(requestId);
  }

  /** Records an admitted request's hold; a request id holds once. */
  take(requestId: string, hold: MemoryHold): void {
    if (this.holds.has(requestId)) throw new Error(`The request ${requestId} already holds.`);
    this.holds.set(requestId, hold);
    const sums = this.accounts.get(hold.accountId) ?? { nano: 0n, holds: 0, days: new Map() };
    this.accounts.set(hold.accountId, sums);
    sums.nano += hold.holdNano;
    sums.holds += 1;
    const day = sums.days.get(hold.freeDay) ?? { holds: 0, freeTokens: 0 };
    sums.days.set(hold.freeDay, day);
    day.holds += 1;
    day.freeTokens += hold.freeTokens;
    for (const [limitId, nano] of hold.limits) this.addToLimit(limitId, nano);
  }

  /** Grows a live hold by a slice; false when it is gone. */
  grow(requestId: string, growth: HoldGrowth): boolean {
    const hold = this.holds.get(requestId);
    if (hold === undefined) return false;
    const sums = this.accounts.get(hold.accountId)!;
    hold.holdNano += growth.holdNano;
    hold.freeTokens += growth.freeTokens;
    hold.maxOutputTokens += growth.tokens;
    hold.expiresAt = Math.max(hold.expiresAt, growth.expiresAt);
    if (growth.checkpoint !== undefined) hold.checkpoint = growth.checkpoint;
    sums.nano += growth.holdNano;
    sums.days.get(hold.freeDay)!.freeTokens += growth.freeTokens;
    if (growth.holdNano !== 0n) {
      for (const limitId of growth.limitIds) {
        hold.limits.set(limitId, (hold.limits.get(limitId) ?? 0n) + growth.holdNano);
        this.addToLimit(limitId, growth.holdNano);
      }
    }
    return true;
  }

  /** Moves a live hold's expiry forward (never back), with its checkpoint when given; false when it is gone. */
  renew(requestId: string, expiresAt: number, checkpoint?: HoldCheckpoint): boolean {
    const hold = this.holds.get(requestId);
    if (hold === undefined) return false;
    hold.expiresAt = Math.max(hold.expiresAt, expiresAt);
    if (checkpoint !== undefined) hold.checkpoint = checkpoint;
    return true;
  }

  /** Takes the hold out of the book and its sums (nothing when it is gone already). */
  release(requestId: string): void {
    const hold = this.holds.get(requestId);
    if (hold === undefined) return;
    this.holds.delete(requestId);
    const sums = this.accounts.get(hold.accountId)!;
    sums.nano -= hold.holdNano;
    sums.holds -= 1;
    const day = sums.days.get(hold.freeDay)!;
    day.holds -= 1;
    day.freeTokens -= hold.freeTokens;
    if (day.holds === 0) sums.days.delete(hold.freeDay);
    if (sums.holds === 0) this.accounts.delete(hold.accountId);
    for (const [limitId, nano] of hold.limits) this.addToLimit(limitId, -nano);
  }

  /** The request ids of holds past their expiry (requests that never settled). */
  expired(now: number): string[] {
    const expired: string[] = [];
    for (const [requestId, hold] of this.holds) if (hold.expiresAt < now) expired.push(requestId);
    return expired;
  }

  account(accountId: string): AccountHeld | undefined {
    const sums = this.accounts.get(accountId);
    if (sums === undefined) return undefined;
    let freeDay = -1;
    for (const day of sums.days.keys()) if (day > freeDay) freeDay = day;
    return { nano: sums.nano, holds: sums.holds, freeDay, freeTokens: sums.days.get(freeDay)?.freeTokens ?? 0 };
  }

  limitNano(limitId: string): bigint {
    return this.limits.get(limitId) ?? 0n;
  }

  private addToLimit(limitId: string, nano: bigint): void {
    const total = (this.limits.get(limitId) ?? 0n) + nano;
    if (total === 0n) this.limits.delete(limitId);
    else this.limits.set(limitId, total);
  }
}
