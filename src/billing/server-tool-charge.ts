import { webSearchLimit, type ServerToolDefinition, type ServerToolUsage } from '../canonical/server-tools.js';
import type { PricedModel } from './priced-model.js';
import type { CanonicalUsage } from '../canonical/usage.js';
import type { NanoUsd } from './money.js';
import type { ModelPrices } from './prices.js';

/** Uses of vendor-run tools in one reply, as a usage row carries them (absent: none). */
export type ServerToolCounts = Partial<ServerToolUsage>;

/**
 * What a reply's vendor-run tools cost beside its tokens: each web search and web fetch at the model's price per
 * request (Anthropic: $10 per 1,000 searches, fetches free). Free tokens never cover them: they are not tokens.
 */
export function serverToolCharge(
  counts: ServerToolCounts,
  prices: Pick<ModelPrices, 'webSearchRequest' | 'webFetchRequest'>,
): NanoUsd {
  return (
    BigInt(counts.webSearchRequests ?? 0) * (prices.webSearchRequest ?? 0n) +
    BigInt(counts.webFetchRequests ?? 0) * (prices.webFetchRequest ?? 0n)
  );
}

/** The searches admission would hold for: every search the request's tools allow, or one where a request bills as one. */
export function webSearchesHeld(
  tools: readonly ServerToolDefinition[] | undefined,
  model: Pick<PricedModel, 'webSearchBilledPerRequest'>,
): number {
  const limit = webSearchLimit(tools);
  return model.webSearchBilledPerRequest === true ? Math.min(1, limit) : limit;
}

/** A reply's server-tool counts and their cost, as its usage record keeps them (nothing when it used none). */
export function serverToolFields(
  usage: CanonicalUsage,
  prices: Pick<ModelPrices, 'webSearchRequest' | 'webFetchRequest'>,
): ServerToolCounts & { serverToolNano?: NanoUsd } {
  const used = usage.serverToolUse;
  if (used === undefined) return {};
  return { ...used, serverToolNano: serverToolCharge(used, prices) };
}

/** The money-only fees of a usage record for the settlement rule: its server tools' cost, charged after its tokens. */
export function serverToolFees(record: { serverToolNano?: NanoUsd }): NanoUsd[] {
  return record.serverToolNano === undefined || record.serverToolNano === 0n ? [] : [record.serverToolNano];
}
