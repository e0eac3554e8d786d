import { z } from 'zod';

/** One rate-limit tier. Tokens per minute is optional: absent means no token limit (the default). */
export interface TierDefinition {
  requestsPerMinute: number;
  tokensPerMinute?: number | undefined;
}

export type Tiers = Readonly<Record<string, TierDefinition>>;

export interface ResolvedTier extends TierDefinition {
  name: string;
}

export const STANDARD_TIER = 'standard';

const DEFAULT_STANDARD_TIER: TierDefinition = Object.freeze({ requestsPerMinute: 100 });

export const DEFAULT_TIERS: Tiers = Object.freeze({
  standard: DEFAULT_STANDARD_TIER,
  pro: { requestsPerMinute: 1_000 },
  enterprise: { requestsPerMinute: 10_000 },
});

const tierSchema = z
  .object({
    requestsPerMinute: z.number().int().positive(),
    tokensPerMinute: z.number().int().positive().optional(),
  })
  .strict();

/**
 * The `tiers` fragment of the config schema. Configured tiers are merged over the defaults, so a config that
 * only raises `pro` keeps `standard` and `enterprise`, and `standard` (the fallback of `resolveTier`) always
 * exists.
 */
export const tiersSchema = z
  .record(z.string().min(1), tierSchema)
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
