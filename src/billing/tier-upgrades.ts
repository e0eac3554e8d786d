import { GatewayError, invalidRequest } from '../canonical/errors.js';
import { higherTier, rankedTiers, resolveTier, type ResolvedTier, type Tiers } from '../ratelimit/tiers.js';
import type { TierChange, TierDecision, TierRepository, TierState } from '../storage/tier-repository.js';
import { describeUsd } from './money.js';

const MS_PER_DAY = 86_400_000;

/** One tier as a user sees it: its limits, how it is reached, and where the account stands. */
export interface TierOption {
  name: string;
  requestsPerMinute: number;
  tokensPerMinute: number | null;
  reachedAtTotalPaidNano: bigint | null;
  priceNano: bigint | null;
  periodDays: number | null;
  /** The account's tier now; a lower one; or a higher one. */
  position: 'current' | 'below' | 'above';
}

export interface TierStatus {
  current: ResolvedTier;
  /** Why the account is on its tier. */
  source: 'granted' | 'paid_total' | 'bought';
  grantedTier: string;
  bought: { tier: string; until: number; renews: boolean } | null;
  /** A bought tier whose renewal the balance could not pay, while the account is below it (not bought again since). */
  lapsed: string | null;
  paidTotalNano: bigint;
  availableNano: bigint;
  /** Lowest to highest. */
  tiers: TierOption[];
}

/**
 * Self-serve tier upgrades: higher limits without the operator (docs/architecture.md#rate-limits-and-tiers). The tier
 * an organisation's requests are limited by is the highest of: the operator's tier, the highest tier its payments
 * (top-ups and redeemed codes, in total) reach, and a tier bought from the balance whose period has not ended.
 * It is stored on the wallet row (`organisations.tier`), which authentication reads on every request on every
 * instance, so a change applies from the next request anywhere.
 */
export class TierUpgrades {
  constructor(
    private readonly repository: TierRepository,
    private readonly tiers: Tiers,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * The tier in force and the one that lapsed for want of balance while the organisation is below it (null: none);
   * one row read, since every page asks. Null when there is no such organisation.
   */
  async lapsed(accountId: string): Promise<{ tier: string; lapsed: string | null } | null> {
    const state = await this.repository.boughtTier(accountId);
    return state === null ? null : { tier: state.tier, lapsed: this.lapsedBelow(state) };
  }

  async status(accountId: string): Promise<TierStatus> {
    const state = await this.repository.state(accountId);
    if (state === null) throw new GatewayError('not_found', `No account with id '${accountId}'.`);
    return this.describe(state);
  }

  /** Recomputes the tier (after a top-up or a redeemed code, which may reach a tier): a no-op when it holds. */
  async refresh(accountId: string): Promise<TierStatus> {
    const result = await this.repository.change(accountId, (state) => this.recompute(state, {}));
    if (result === null) throw new GatewayError('not_found', `No account with id '${accountId}'.`);
    return this.describe(result.state);
  }

  /** The operator's tier (CLI `accounts tier`, operator view): a floor under what the user reached or bought. */
  async grant(accountId: string, tier: string): Promise<TierStatus> {
    if (!Object.hasOwn(this.tiers, tier))
      throw invalidRequest(`Unknown tier '${tier}'. Tiers: ${Object.keys(this.tiers).join(', ')}.`, 'tier');
    const result = await this.repository.change(accountId, (state) =>
      this.recompute({ ...state, grantedTier: tier }, { grantedTier: tier }),
    );
    if (result === null) throw new GatewayError('not_found', `No account with id '${accountId}'.`);
    return this.describe(result.state);
  }

  /**
   * Buys `tier` from the balance for one period, with one `tier` ledger entry. Refused (and nothing changes) when
   * the tier cannot be bought, is not above the account's tier, or costs more than the balance has available.
   */
  async buy(accountId: string, tier: string): Promise<TierStatus> {
    const definition = Object.hasOwn(this.tiers, tier) ? this.tiers[tier] : undefined;
    const price = definition?.upgrade?.priceNano;
    if (definition === undefined || price === undefined)
      throw invalidRequest(`The ${tier} tier cannot be bought here.`, 'tier');
    const periodMs = definition.upgrade!.periodDays * MS_PER_DAY;
    const at = this.now();
    const result = await this.repository.change(accountId, (state): TierDecision => {
      if (higherTier(state.tier, tier, this.tiers) !== tier || resolveTier(state.tier, this.tiers).name === tier) {
        return { refused: 'not_higher' };
      }
      if (state.balanceNano - state.reservedNano < price) return { refused: 'insufficient_balance' };
      const bought = { tier, until: at + periodMs, renews: true };
      return this.recompute(
        { ...state, boughtTier: tier, boughtUntil: bought.until },
        {
          bought,
          charge: {
            amountNano: price,
            idempotencyKey: `tier:${accountId}:${tier}:${at}`,
            note: periodNote(tier, definition.upgrade!.periodDays),
            at,
          },
        },
        true,
      );
    });
    if (result === null) throw new GatewayError('not_found', `No account with id '${accountId}'.`);
    if (!result.applied) {
      const refused = 'refused' in result ? result.refused : undefined;
      if (refused === 'not_higher')
        throw new GatewayError(
          'conflict',
          `Your account is already on the ${resolveTier(result.state.tier, this.tiers).name} tier, which is not below ${tier}.`,
          { param: 'tier' },
        );
      const available = result.state.balanceNano - result.state.reservedNano;
      throw new GatewayError(
        'conflict',
        `The ${tier} tier costs ${describeUsd(price)} and your available balance is ${describeUsd(available < 0n ? 0n : available)}. Add credit first.`,
        { param: 'tier' },
      );
    }
    return this.describe(result.state);
  }

  /** Whether a bought tier renews from the balance at the end of its period. */
  async setRenewal(accountId: string, renews: boolean): Promise<TierStatus> {
    const result = await this.repository.change(accountId, (state): TierDecision => {
      // Not renewing a tier that lapsed: the user lets it go, and the dashboard stops offering it.
      if (!renews && lapsedTierOf(state) !== null)
        return { change: { tier: state.tier, bought: { tier: null, until: null, renews: true } } };
      if (state.boughtTier === null || state.boughtUntil === null) return { refused: 'nothing_bought' };
      return { change: { tier: state.tier, bought: { tier: state.boughtTier, until: state.boughtUntil, renews } } };
    });
    if (result === null) throw new GatewayError('not_found', `No account with id '${accountId}'.`);
    if (!result.applied && 'refused' in result && result.refused !== undefined)
      throw invalidRequest('No bought tier to renew or cancel.', 'renews');
    return this.describe(result.state);
  }

  /**
   * Ends or renews every period that ended by now: renewed (one `tier` ledger entry per period, keyed by the
   * period, so two sweeping instances charge once) when set to renew and the available balance pays for it,
   * otherwise lapsed (the tier drops to what remains). Returns how many accounts changed.
   */
  async settleEndedPeriods(limit = 100): Promise<number> {
    const now = this.now();
    let changed = 0;
    for (const accountId of await this.repository.periodsEnded(now, limit)) {
      const result = await this.repository.change(accountId, (state): TierDecision => {
        if (state.boughtTier === null || state.boughtUntil === null || state.boughtUntil > now)
          return { unchanged: true };
        const definition = Object.hasOwn(this.tiers, state.boughtTier) ? this.tiers[state.boughtTier] : undefined;
        const price = definition?.upgrade?.priceNano;
        if (
          state.renews &&
          definition?.upgrade !== undefined &&
          price !== undefined &&
          state.balanceNano - state.reservedNano >= price
        ) {
          const periodMs = definition.upgrade.periodDays * MS_PER_DAY;
          // The next period starts where the last ended (no gap, no overlap), or now if the sweep came late by more than a period.
          const until = Math.max(state.boughtUntil + periodMs, now + 1);
          return this.recompute(
            { ...state, boughtUntil: until },
            {
              bought: { tier: state.boughtTier, until, renews: true },
              charge: {
                amountNano: price,
                idempotencyKey: `tier:${accountId}:${state.boughtTier}:renew:${state.boughtUntil}`,
                note: `${periodNote(state.boughtTier, definition.upgrade.periodDays)} (renewal)`,
                at: now,
              },
            },
            true,
          );
        }
        // Lapsed: the period is over. A period set to renew that the balance could not pay keeps its tier's name
        // with no end (`lapsedTier`), so the dashboard can say so and offer to buy it again; a cancelled one leaves
        // nothing behind.
        return this.recompute(
          { ...state, boughtTier: null, boughtUntil: null },
          { bought: { tier: state.renews ? state.boughtTier : null, until: null, renews: true } },
          true,
        );
      });
      if (result?.applied === true) changed += 1;
    }
    return changed;
  }

  /** The effective tier of a state: the highest of granted, reached by payments, and bought (while its period runs). */
  effectiveTier(
    state: Pick<TierState, 'grantedTier' | 'boughtTier' | 'boughtUntil' | 'paidTotalNano'>,
    at = this.now(),
  ): string {
    let tier = resolveTier(state.grantedTier, this.tiers).name;
    const reached = this.reachedByPayments(state.paidTotalNano);
    if (reached !== null) tier = higherTier(tier, reached, this.tiers);
    if (state.boughtTier !== null && state.boughtUntil !== null && state.boughtUntil > at)
      tier = higherTier(tier, state.boughtTier, this.tiers);
    return tier;
  }

  /**
   * The tier that lapsed for want of balance, while the account's tier is below it (reached again by payments or the
   * operator: nothing to offer), else null.
   */
  lapsedBelow(state: Pick<TierState, 'tier' | 'boughtTier' | 'boughtUntil'>): string | null {
    const lapsed = lapsedTierOf(state);
    if (lapsed === null || !Object.hasOwn(this.tiers, lapsed)) return null;
    const current = resolveTier(state.tier, this.tiers).name;
    return current !== lapsed && higherTier(current, lapsed, this.tiers) === lapsed ? lapsed : null;
  }

  private reachedByPayments(paidNano: bigint): string | null {
    let reached: string | null = null;
    for (const tier of rankedTiers(this.tiers)) {
      const threshold = tier.upgrade?.atTotalPaidNano;
      if (threshold !== undefined && paidNano >= threshold) reached = tier.name;
    }
    return reached;
  }

  private recompute(state: TierState, change: Omit<TierChange, 'tier'>, force = false): TierDecision {
    const tier = this.effectiveTier(state);
    if (!force && tier === state.tier && change.grantedTier === undefined) return { unchanged: true };
    return { change: { ...change, tier } };
  }

  private describe(state: TierState): TierStatus {
    const current = resolveTier(state.tier, this.tiers);
    const order = rankedTiers(this.tiers);
    const currentIndex = order.findIndex((tier) => tier.name === current.name);
    const boughtActive = state.boughtTier !== null && state.boughtUntil !== null && state.boughtUntil > this.now();
    const source: TierStatus['source'] =
      boughtActive && state.boughtTier === current.name
        ? 'bought'
        : this.reachedByPayments(state.paidTotalNano) === current.name &&
            resolveTier(state.grantedTier, this.tiers).name !== current.name
          ? 'paid_total'
          : 'granted';
    return {
      current,
      source,
      grantedTier: state.grantedTier,
      bought: boughtActive ? { tier: state.boughtTier!, until: state.boughtUntil!, renews: state.renews } : null,
      lapsed: this.lapsedBelow(state),
      paidTotalNano: state.paidTotalNano,
      availableNano: state.balanceNano - state.reservedNano,
      tiers: order.map((tier, index) => ({
        name: tier.name,
        requestsPerMinute: tier.requestsPerMinute,
        tokensPerMinute: tier.tokensPerMinute ?? null,
        reachedAtTotalPaidNano: tier.upgrade?.atTotalPaidNano ?? null,
        priceNano: tier.upgrade?.priceNano ?? null,
        periodDays: tier.upgrade?.priceNano === undefined ? null : tier.upgrade.periodDays,
        position: index === currentIndex ? 'current' : index < currentIndex ? 'below' : 'above',
      })),
    };
  }
}

/** A bought tier kept with no end: its renewal lapsed for want of balance (see `settleEndedPeriods`). */
function lapsedTierOf(state: Pick<TierState, 'boughtTier' | 'boughtUntil'>): string | null {
  return state.boughtTier !== null && state.boughtUntil === null ? state.boughtTier : null;
}

function periodNote(tier: string, days: number): string {
  return `${tier} tier for ${days} days`;
}
