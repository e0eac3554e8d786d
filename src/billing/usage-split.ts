import { cacheWrite5mTokens, type CanonicalUsage } from '../canonical/usage.js';
import type { BilledTokens, SettlementRoom, SettlementSplit } from '../storage/billing-types.js';
import { affordableUnits, type NanoUsd } from './money.js';
import type { ModelPrices } from './prices.js';

/**
 * The one rule that splits a reply's reported usage into what is free, what is billed and what is unbilled,
 * applied by every settlement (whole, stream, cut, slice refused, swept, journal replay) on every backend:
 * 1. the free allowance first, up to what the request may take of it (its hold's free tokens and what is left
 *    of its day's allowance), in the order uncached input, cache reads, 5-minute writes, 1-hour writes, output;
 * 2. then money, in the same order, in whole tokens, within the lowest of the money limits (the balance, the key's
 *    remaining spend limit, any other limit);
 * 3. whatever neither covers is unbilled, tokens and their cost at list price.
 * Money-only charges (a per-request fee) come after the tokens: billed within what the limits leave, the rest
 * unbilled. Per token kind, free + billed + unbilled = reported; the charge never exceeds any limit.
 */

export const TOKEN_KINDS = ['input', 'cacheRead', 'cacheWrite5m', 'cacheWrite1h', 'output'] as const;
export type TokenKind = (typeof TOKEN_KINDS)[number];

/** One token kind's part of the split. */
export interface KindSplit {
  reported: number;
  free: number;
  billed: number;
  unbilled: number;
}

export interface UsageSplit extends SettlementSplit {
  kinds: Record<TokenKind, KindSplit>;
}

/** Reported token counts per kind, in the order free tokens and money cover them. */
export function tokensByKind(usage: CanonicalUsage): Record<TokenKind, number> {
  const cacheWrite = wholeTokens(usage.cacheWriteTokens);
  const write1h = Math.min(wholeTokens(usage.cacheWrite1hTokens), cacheWrite);
  return {
    input: wholeTokens(usage.inputTokens),
    cacheRead: wholeTokens(usage.cacheReadTokens),
    cacheWrite5m: cacheWrite5mTokens({ cacheWriteTokens: cacheWrite, cacheWrite1hTokens: write1h }),
    cacheWrite1h: write1h,
    output: wholeTokens(usage.outputTokens),
  };
}

/**
 * A count as money can take it: the pipeline settles a vendor's bad usage on the local count before it gets here
 * (usage-sanity.ts), so this only keeps a bad figure from ever throwing or pricing below zero.
 */
function wholeTokens(count: number): number {
  return Number.isSafeInteger(count) && count > 0 ? count : 0;
}

export function priceOfKind(prices: ModelPrices, kind: TokenKind): NanoUsd {
  switch (kind) {
    case 'input':
      return prices.input;
    case 'cacheRead':
      return prices.cacheRead;
    case 'cacheWrite5m':
      return prices.cacheWrite;
    case 'cacheWrite1h':
      return prices.cacheWrite1h;
    case 'output':
      return prices.output;
  }
}

/** The lowest of the money limits, never below zero; no limit at all means nothing may be charged. */
function moneyRoom(limits: readonly NanoUsd[]): NanoUsd {
  let room: NanoUsd | undefined;
  for (const limit of limits) if (room === undefined || limit < room) room = limit;
  return room === undefined || room < 0n ? 0n : room;
}

/** Splits a usage by the rule above. `feesNano`: money-only charges of the request, billed after its tokens. */
export function splitUsage(
  usage: CanonicalUsage,
  prices: ModelPrices,
  room: SettlementRoom,
  feesNano: readonly NanoUsd[] = [],
): UsageSplit {
  const reported = tokensByKind(usage);
  let free = Math.max(0, room.freeTokens);
  let money = moneyRoom(room.moneyNano);
  let billedNano = 0n;
  let unbilledNano = 0n;
  let unbilledTokens = 0;
  let freeTokens = 0;
  const kinds = {} as Record<TokenKind, KindSplit>;
  const billedInFreeOrder: BilledTokens[] = [];
  for (const kind of TOKEN_KINDS) {
    const tokens = reported[kind];
    const price = priceOfKind(prices, kind);
    const freeHere = Math.min(free, tokens);
    free -= freeHere;
    freeTokens += freeHere;
    const rest = tokens - freeHere;
    const affordable = affordableUnits(rest, price, money);
    const cost = BigInt(affordable) * price;
    money -= cost;
    billedNano += cost;
    unbilledTokens += rest - affordable;
    unbilledNano += BigInt(rest - affordable) * price;
    kinds[kind] = { reported: tokens, free: freeHere, billed: affordable, unbilled: rest - affordable };
    if (affordable > 0) billedInFreeOrder.push({ tokens: affordable, priceNano: price });
  }
  for (const fee of feesNano) {
    if (fee < 0n) throw new RangeError('A fee is never negative.');
    const billed = fee <= money ? fee : money;
    money -= billed;
    billedNano += billed;
    unbilledNano += fee - billed;
  }
  return { kinds, freeTokens, billedNano, unbilledTokens, unbilledNano, billedInFreeOrder };
}
