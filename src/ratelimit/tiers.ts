import { z } from 'zod';

/**
 * How a user reaches a tier without the operator (docs/architecture.md#rate-limits-and-tiers):
 * automatically once their payments (top-ups and redeemed codes) reach a total, as OpenAI's usage tiers do,
 * and/or by buying it from their balance for a period that renews (or lapses when the balance cannot pay).
 */
export interface TierUpgradePath {
  /** Reached automatically once the account's top-ups and redeemed codes add up to this (nano-USD). */
  atTotalPaidNano?: bigint | undefined;
  /** Bought from the balance: this price (nano-USD) per period. */
  priceNano?: bigint | undefined;
  periodDays: number;
}

/** One rate-limit tier. Tokens per minute is optional: absent means no token limit (the default). */
export interface TierDefinition {
  requestsPerMinute: number;
  tokensPerMinute?: number | undefined;
  /** Absent: only the operator puts accounts on this tier. */
  upgrade?: TierUpgradePath | undefined;
}

export type Tiers = Readonly<Record<string, TierDefinition>>;

export interface ResolvedTier extends TierDefinition {
  name: string;
}

export const STANDARD_TIER = 'standard';

const DEFAULT_STANDARD_TIER: TierDefinition = Object.freeze({ requestsPerMinute: 100 });

const NANO_PER_USD = 1_000_000_000n;

export const DEFAULT_TIERS: Tiers = Object.freeze({
  standard: DEFAULT_STANDARD_TIER,
  // Self-serve by default: $50 of payments in total, or $20 from the balance per 30 days.
  pro: {
    requestsPerMinute: 1_000,
    upgrade: { atTotalPaidNano: 50n * NANO_PER_USD, priceNano: 20n * NANO_PER_USD, periodDays: 30 },
  },
  enterprise: { requestsPerMinute: 10_000 },
});

/** "50", "19.99", 50 → nano-USD; decimal text only (no float reaches money), cents at most. */
const usdAmount = z
  .union([z.string(), z.number()])
  .transform(String)
  .pipe(z.string().regex(/^\d{1,9}(\.\d{1,2})?$/, 'must be a USD amount such as "20" or "19.99"'))
  .transform((text) => {
    const [whole, fraction = ''] = text.split('.');
    return BigInt(whole!) * NANO_PER_USD + BigInt(fraction.padEnd(9, '0'));
  })
  .refine((nano) => nano > 0n, 'must be more than 0');

const tierSchema = z
  .object({
    requestsPerMinute: z.number().int().positive(),
    tokensPerMinute: z.number().int().positive().optional(),
    /** Reached automatically once the account's payments total this many USD. */
    reachedAtTotalPaidUsd: usdAmount.optional(),
    /** Bought from the balance for this many USD per period. */
    priceUsd: usdAmount.optional(),
    /** The length of a bought period in days (30 by default). */
    periodDays: z.number().int().min(1).max(366).optional(),
  })
  .strict()
  .transform((tier): TierDefinition => {
    const definition: TierDefinition = { requestsPerMinute: tier.requestsPerMinute };
    if (tier.tokensPerMinute !== undefined) definition.tokensPerMinute = tier.tokensPerMinute;
    if (tier.reachedAtTotalPaidUsd !== undefined || tier.priceUsd !== undefined) {
      definition.upgrade = {
        ...(tier.reachedAtTotalPaidUsd === undefined ? {} : { atTotalPaidNano: tier.reachedAtTotalPaidUsd }),
        ...(tier.priceUsd === undefined ? {} : { priceNano: tier.priceUsd }),
        periodDays: tier.periodDays ?? 30,
      };
    }
    return definition;
  });

/**
 * The `tiers` fragment of the config schema. Configured tiers are merged over the defaults, so a config that
 * only raises `pro` keeps `standard` and `enterprise`, and `standard` (the fallback of `resolveTier`) always
 * exists.
 */
export const tiersSchema = z
  .record(z.string().min(1).max(40), tierSchema)
  .default({})
  .transform((configured): Tiers => Object.freeze({ ...DEFAULT_TIERS, ...configured }));

/**
 * The tier a key is limited by. An unknown or missing tier name falls back to `standard`, not to "unlimited":
 * a typo in an account's tier must never lift its limits (and must not fail its requests either).
 */
export function resolveTier(name: string | null | undefined, tiers: Tiers = DEFAULT_TIERS): ResolvedTier {
  if (name !== null && name !== undefined && Object.hasOwn(tiers, name)) {
    const tier = tiers[name];
    if (tier !== undefined) return { name, ...tier };
  }
  // `tiersSchema` always merges the defaults in; a hand-built map without `standard` still gets the default.
  const standard = Object.hasOwn(tiers, STANDARD_TIER) ? tiers[STANDARD_TIER] : undefined;
  return { name: STANDARD_TIER, ...(standard ?? DEFAULT_STANDARD_TIER) };
}

/** Tiers from lowest to highest limits: requests per minute, then tokens per minute (none = unlimited = highest). */
export function rankedTiers(tiers: Tiers): ResolvedTier[] {
  const tokens = (tier: TierDefinition) => tier.tokensPerMinute ?? Number.POSITIVE_INFINITY;
  return Object.entries(tiers)
    .map(([name, definition]) => ({ name, ...definition }))
    .sort(
      (a, b) =>
        a.requestsPerMinute - b.requestsPerMinute ||
        tokens(a) - tokens(b) ||
        (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
    );
}

/** The higher of two tiers by `rankedTiers`; unknown names count as `standard`. */
export function higherTier(a: string, b: string, tiers: Tiers): string {
  const order = rankedTiers(tiers).map((tier) => tier.name);
  const rank = (name: string) => order.indexOf(resolveTier(name, tiers).name);
  return rank(b) > rank(a) ? resolveTier(b, tiers).name : resolveTier(a, tiers).name;
}
