import { estimateRequestInputTokens, loadTokenizer, upperBoundRequestInputTokens } from '../canonical/count-tokens.js';
import { GatewayError } from '../canonical/errors.js';
import type { CanonicalRequest } from '../canonical/request.js';
import type { CanonicalUsage } from '../canonical/usage.js';
import type { CatalogModel } from '../catalog/model-catalog.js';
import type { AuthenticatedKey } from '../keys/key-service.js';
import { decideAdmission } from '../storage/billing-rules.js';
import type { AdmissionPlan, AdmissionState, BillingRepository, KeySpendState, Reservation, ReserveInput, SettleResult } from '../storage/billing-types.js';
import { spendPeriodResetsAt } from '../keys/key-permissions.js';
import { formatUsd } from './money.js';
import { isStorageUnavailable } from '../storage/storage-unavailable.js';
import type { UsageRecord } from '../storage/types.js';
import { planAdmission, type AdmissionRequest } from './admission.js';
import { utcDayNumber } from './free-allowance.js';
import type { JournalEntry } from './settlement-journal-entry.js';
import type { SettlementJournal } from './settlement-journal.js';
import { priceSettlement } from './settlement-pricing.js';

export interface BillingSettings {
  /** Free tokens (input + output) per account per UTC day; 0 disables the allowance. */
  freeTokensPerDay: number;
  /** How long a hold may stay open before the sweeper releases it (longer than any request can run). */
  reservationTtlMs: number;
}

export interface SettlementInput {
  requestId: string;
  auth: AuthenticatedKey;
  model: CatalogModel;
  usage: CanonicalUsage;
  status: string;
  stream: boolean;
  startedAt: number;
  rawUsage: unknown;
  /** The request's hold, when it was admitted here: its free tokens let storage price before claiming it. */
  reservation?: Reservation;
}

/** A settlement's outcome: settled, found settled before, or journaled because the store could not take it. */
export type SettlementOutcome = SettleResult | { settled: false; reason: 'journaled'; durable: boolean };

/** What one replay pass did (`replayJournal`). */
export interface ReplayReport {
  settled: number;
  alreadySettled: number;
  /** Entries the store refused for another reason than an outage: kept, tried again on the next pass. */
  failed: Array<{ requestId: string; error: unknown }>;
  /** The store was unreachable: the pass stopped there. */
  storeUnavailable: boolean;
  remaining: number;
}

/**
 * The tokenizer counts with OpenAI's encoding; other vendors' tokenizers count somewhat more for the same text.
 * The hold covers that difference so the charge almost never exceeds it; settlement charges the vendor's count.
 */
const INPUT_ESTIMATE_MARGIN = 1.15;
const INPUT_ESTIMATE_FLOOR = 16;
const SETTLEMENT_ATTEMPTS = 4;
/**
 * What the upper bound's plan answers (as a refusal, so that the repository writes nothing) when it cannot stand
 * for the tokenizer's: admit then counts the prompt and reserves again. Never shown to a client.
 */
const NEEDS_TOKENIZER_COUNT = 'tollgate:admission-needs-tokenizer-count';
/** No request runs this long; a hold still here then belongs to a request that will never settle. */
const MAX_RENEWED_HOLD_MS = 6 * 60 * 60_000;

/** The 403 of a key whose spend limit cannot cover the request, saying what is spent, held and when it resets. */
function keySpendLimitReached(key: KeySpendState, now: number): GatewayError {
  const resetsAt = spendPeriodResetsAt(key.period, now);
  const per = key.period === 'total' ? 'in total' : `per ${key.period} (UTC)`;
  const when = resetsAt === null ? 'It does not reset (a total limit): raise it in the dashboard or with PATCH /v1/keys/{id}.' : `It resets at ${new Date(resetsAt).toISOString()}.`;
  return new GatewayError(
    'key_spend_limit_reached',
    `This API key's spend limit of $${formatUsd(key.limitNano)} ${per} is reached: $${formatUsd(key.spentNano)} spent and $${formatUsd(key.reservedNano)} held by requests in flight leave $${formatUsd(key.remainingNano)}, less than this request may cost. ${when}`,
  );
}

/** The hold's input tokens for a count of the prompt: the margin for other vendors' tokenizers, and a floor. */
function withMargin(inputTokens: number): number {
  return Math.ceil(inputTokens * INPUT_ESTIMATE_MARGIN) + INPUT_ESTIMATE_FLOOR;
}

interface LiveHold {
  admittedAt: number;
  /** The expiry last written. */
  expiresAt: number;
}

export class BillingService {
  /** Holds of requests in flight here, renewed so that the sweeper never releases the hold of a long stream. */
  private readonly liveHolds = new Map<string, LiveHold>();
  private renewal: NodeJS.Timeout | undefined;

  constructor(
    private readonly repository: BillingRepository,
    private readonly settings: BillingSettings,
    private readonly now: () => number = Date.now,
    /** Where settlements the store refuses go (design §4); without one, a refused settlement throws. */
    private readonly journal?: SettlementJournal,
  ) {}

  /**
   * Takes the request's worst-case hold, or refuses with the 403 of spec §5.5 saying what the balance covers.
   *
   * The hold is first planned with an upper bound of the tokenizer's count (UTF-8 bytes, without the tokenizer:
   * measured 0.1 µs instead of 5 µs for a two-message prompt, and a gateway serving a rich account stays at
   * ~117 MB RSS instead of ~170 MB, the tokenizer's tables never loaded). Fewer input tokens can only lower the
   * hold and raise what the balance covers, so when the bound's plan admits with the output limit the tokenizer's
   * plan would give (the client's own, or the model's: an affordability cap could only loosen), the tokenizer's
   * plan would admit with that same limit: the request is admitted exactly as it would be, only with a larger
   * hold (see below). Otherwise (a refusal, or an output capped at what the account can afford)
   * the prompt is counted with the tokenizer and planned again, exactly as before, so refusals, their figures
   * and output caps are the tokenizer's. The plan runs under the account's lock (for SQLite inside a batch
   * transaction, for PostgreSQL possibly twice), so the tokenizer is never loaded or run there: the bound's plan
   * refuses with a marker instead, and a refused reservation writes nothing.
   *
   * A larger hold is seen by this account's concurrent admissions while the request runs: money and free tokens
   * held for it are not available to them (a free hold may take more of today's allowance than the prompt needs).
   * Settlement charges the vendor's usage, with the free tokens held as a ceiling on what of it is free: the two
   * holds price a reply alike unless the vendor counts more input than the tokenizer's estimate with its margin
   * (15% + 16) while allowance was left beyond the tokenizer's hold; then more of that excess is free with the
   * bound's hold (never more than today's allowance), where the tokenizer's hold would have charged it.
   */
  async admit(requestId: string, auth: AuthenticatedKey, model: CatalogModel, request: CanonicalRequest): Promise<Reservation> {
    const now = this.now();
    const input: Omit<ReserveInput, 'plan'> = {
      requestId,
      accountId: auth.account.id,
      apiKeyId: auth.key.id,
      day: utcDayNumber(now),
      freeAllowanceTokens: this.settings.freeTokensPerDay,
      createdAt: now,
      expiresAt: now + this.settings.reservationTtlMs,
      keySpendLimited: auth.key.permissions.spendLimit !== null,
      ...(auth.key.permissions.spendLimit === null ? {} : { keySpendHint: { ...auth.key.permissions.spendLimit, ...auth.key.spend } }),
      ...(auth.money === undefined ? {} : { accountHint: auth.money }),
    };
    const admission = (inputTokens: number): AdmissionRequest => ({
      inputTokens: withMargin(inputTokens),
      clientMaxOutputTokens: request.maxOutputTokens,
      modelMaxOutputTokens: model.maxOutputTokens,
      prices: model.prices,
    });
    const bound = admission(upperBoundRequestInputTokens(request));
    const boundPlan = (state: AdmissionState): AdmissionPlan => {
      const plan = planAdmission(bound, state);
      const tokenizersOutput = plan.admitted && (request.maxOutputTokens !== undefined || plan.maxOutputTokens === model.maxOutputTokens);
      return tokenizersOutput ? plan : { admitted: false, reason: NEEDS_TOKENIZER_COUNT };
    };
    // With the account's money read with the key (PostgreSQL), an account the bound will not settle goes straight
    // to the tokenizer's count: one reservation, as before, instead of a refused one first (a locked transaction
    // of 3 round trips). Only the path depends on this possibly older read, never the outcome.
    const boundWillNotDo = auth.money !== undefined && !decideAdmission(auth.money, { ...input, plan: boundPlan }).plan.admitted;
    let result = boundWillNotDo ? undefined : await this.repository.reserve({ ...input, plan: boundPlan });
    if (result === undefined || (!result.admitted && result.reason === NEEDS_TOKENIZER_COUNT)) {
      await loadTokenizer();
      const precise = admission(estimateRequestInputTokens(request));
      result = await this.repository.reserve({ ...input, plan: (state) => planAdmission(precise, state) });
    }
    if (!result.admitted) {
      const keySpend = result.state.keySpend;
      if (keySpend?.binding === true) throw keySpendLimitReached(keySpend, now);
      throw new GatewayError('insufficient_balance', result.reason);
    }
    this.liveHolds.set(requestId, { admittedAt: now, expiresAt: now + this.settings.reservationTtlMs });
    this.renewHoldsRegularly();
    return result.reservation;
  }

  /**
   * One timer for all live holds (not one per request): every third of the TTL, each hold that has used up a
   * third of its time gets a full TTL again. A hold's expiry is then always at least two thirds of the TTL away
   * while its request runs, and a crashed instance's holds still expire one TTL after its last renewal.
   */
  private renewHoldsRegularly(): void {
    if (this.renewal !== undefined) return;
    this.renewal = setInterval(() => this.renewHolds(), Math.max(1, Math.floor(this.settings.reservationTtlMs / 3)));
    this.renewal.unref();
  }

  private renewHolds(): void {
    if (this.liveHolds.size === 0) {
      clearInterval(this.renewal);
      this.renewal = undefined;
      return;
    }
    const now = this.now();
    const ttl = this.settings.reservationTtlMs;
    for (const [requestId, hold] of this.liveHolds) {
      if (now - hold.admittedAt > MAX_RENEWED_HOLD_MS) {
        this.liveHolds.delete(requestId);
        continue;
      }
      if (hold.expiresAt - now > (ttl * 2) / 3) continue;
      hold.expiresAt = now + ttl;
      // A failed write is retried on the next tick; a hold that is gone (settled meanwhile) is forgotten.
      this.repository.extendHold(requestId, hold.expiresAt).then(
        (held) => {
          if (!held) this.liveHolds.delete(requestId);
        },
        () => {},
      );
    }
  }

  /**
   * Settles exactly once: the repository's unique request id makes a retry after a storage fault a no-op
   * when the first attempt had in fact committed, so a fault never bills twice and never loses the record.
   * A settlement the store cannot take (unreachable, or failing every attempt) goes to the journal, on disk
   * before this resolves, and is replayed by `replayJournal`; its hold stays renewed until then.
   */
  async settle(input: SettlementInput): Promise<SettlementOutcome> {
    const entry: JournalEntry = {
      usage: this.usageRecord(input),
      prices: input.model.prices,
      ...(input.reservation === undefined ? {} : { heldFreeTokens: input.reservation.freeTokens }),
      journaledAt: 0,
    };
    let journaled = false;
    try {
      for (let attempt = 1; ; attempt++) {
        try {
          return await this.apply(entry);
        } catch (error) {
          // An unreachable store is not retried here: the journal takes it at once and replay retries.
          const journalNow = this.journal !== undefined && isStorageUnavailable(error);
          if (attempt >= SETTLEMENT_ATTEMPTS || journalNow) {
            if (this.journal === undefined) throw error;
            journaled = true;
            return { settled: false, reason: 'journaled', durable: await this.journal.append({ ...entry, journaledAt: this.now() }) };
          }
          await new Promise((resolve) => setTimeout(resolve, 25 * 2 ** attempt));
        }
      }
    } finally {
      // Settled (or failed without a journal): no longer renewed; an unsettled one is then the sweeper's.
      if (!journaled) this.liveHolds.delete(input.requestId);
    }
  }

  /**
   * One pass over the journal: each pending settlement through the same repository call as a live one (its own
   * usage row, prices and hold), so it is billed as it would have been, or skipped when the store already has
   * it. Stops at the first that finds the store unreachable; the next pass carries on.
   */
  async replayJournal(onApplied?: (entry: JournalEntry, result: SettleResult) => void): Promise<ReplayReport> {
    const report: ReplayReport = { settled: 0, alreadySettled: 0, failed: [], storeUnavailable: false, remaining: 0 };
    const journal = this.journal;
    if (journal === undefined) return report;
    for (const entry of journal.pendingEntries()) {
      const { requestId } = entry.usage;
      try {
        const result = await this.apply(entry);
        journal.applied(requestId, result.settled ? 'settled' : 'already_settled');
        this.liveHolds.delete(requestId);
        if (result.settled) report.settled += 1;
        else report.alreadySettled += 1;
        onApplied?.(entry, result);
      } catch (error) {
        if (isStorageUnavailable(error)) {
          report.storeUnavailable = true;
          break;
        }
        report.failed.push({ requestId, error });
      }
    }
    report.remaining = journal.stats().pending;
    return report;
  }

  /** The repository's settlement of one entry: its usage row, priced with its prices and the hold's free tokens. */
  private apply(entry: JournalEntry): Promise<SettleResult> {
    const { usage, prices } = entry;
    const price = (freeTokensHeld: number) => priceSettlement(usage, prices, freeTokensHeld);
    return this.repository.settle({ usage, price, ...(entry.heldFreeTokens === undefined ? {} : { heldFreeTokens: entry.heldFreeTokens }) });
  }

  private usageRecord(input: SettlementInput): UsageRecord {
    return {
      requestId: input.requestId,
      accountId: input.auth.account.id,
      apiKeyId: input.auth.key.id,
      model: input.model.id,
      family: input.model.family,
      inputTokens: input.usage.inputTokens,
      cacheReadTokens: input.usage.cacheReadTokens,
      cacheWriteTokens: input.usage.cacheWriteTokens,
      outputTokens: input.usage.outputTokens,
      reasoningTokens: input.usage.reasoningTokens,
      status: input.status,
      stream: input.stream,
      latencyMs: Math.max(0, this.now() - input.startedAt),
      createdAt: input.startedAt,
      rawUsage: input.rawUsage === null || input.rawUsage === undefined ? null : JSON.stringify(input.rawUsage),
      costNano: 0n,
      freeTokens: 0,
      unbilledNano: 0n,
    };
  }

  /** Releases holds of requests that never settled (a crashed instance). */
  releaseExpired(): Promise<number> {
    return this.repository.releaseExpiredReservations(this.now());
  }
}
