import { serverToolFees, serverToolFields, webSearchesHeld } from './server-tool-charge.js';
import { forcesWebSearch } from '../canonical/server-tools.js';
import { estimateRequestInputTokens, loadTokenizer, upperBoundRequestInputTokens } from '../canonical/count-tokens.js';
import { GatewayError } from '../canonical/errors.js';
import { choiceCount, type CanonicalRequest } from '../canonical/request.js';
import { totalInputTokens, type CanonicalUsage } from '../canonical/usage.js';
import { calibratedTokens, InputCalibration } from './input-calibration.js';
import { LiveHolds } from './live-holds.js';
import { boundedRawUsage } from './raw-usage.js';
import { outputSliceOf, type PricedModel } from './priced-model.js';
import type { AuthenticatedKey } from '../keys/key-service.js';
import { decideAdmission } from '../storage/billing-rules.js';
import type {
  AdmissionPlan,
  AdmissionState,
  BillingRepository,
  HoldCheckpoint,
  OrphanBiller,
  OrphanedHold,
  Reservation,
  ReserveInput,
  SettleResult,
  SweepResult,
} from '../storage/billing-types.js';
import { isStorageUnavailable } from '../storage/storage-unavailable.js';
import type { UsageRecord } from '../storage/types.js';
import { firstSliceOf, inputPrice, planAdmission, type AdmissionRequest } from './admission.js';
import { carriesOneHourBreakpoint } from './cache-lifetime.js';
import { formatUsd } from './money.js';
import type { ModelPrices } from './prices.js';
import { utcDayNumber } from './free-allowance.js';
import type { JournalEntry } from './settlement-journal-entry.js';
import type { SettlementJournal } from './settlement-journal.js';
import { planSliceGrant } from './slice-grant.js';
import { spendLimitReached } from './spend-limit-refusal.js';
import { splitUsage } from './usage-split.js';

export interface BillingSettings {
  /** Free tokens (input + output) per account per UTC day; 0 disables the allowance. */
  freeTokensPerDay: number;
  /** How long a hold may stay open before the sweeper releases it (longer than any request can run). */
  reservationTtlMs: number;
  /**
   * How often this instance writes the checkpoints of its streams' delivered output, in one batch with the
   * renewals of their holds (default 3 s): what a crash can leave unbilled is at most this long of output.
   */
  checkpointIntervalMs?: number;
  /** A model's prices by public id: how the sweeper prices a dead instance's hold at its checkpoint. */
  pricesOf?: (modelId: string) => ModelPrices | undefined;
  /** The per-model ratios of vendor to local prompt counts (input-calibration.ts); a fresh one when absent. */
  calibration?: InputCalibration;
}

/** What the sweeper did with expired holds: settled at their checkpoint, or released (nothing delivered). */
export type { SweepResult } from '../storage/billing-types.js';

/** The outcome of a request for one more slice of output. */
export type SliceOutcome =
  | { granted: true; tokens: number }
  | { granted: false; reason: 'balance' | 'spend_limit' | 'gone' };

export interface SettlementInput {
  requestId: string;
  auth: AuthenticatedKey;
  model: PricedModel;
  usage: CanonicalUsage;
  status: string;
  stream: boolean;
  startedAt: number;
  rawUsage: unknown;
  /** The client route the request came in on, kept in its usage record. */
  route?: string;
  /** The request's hold, when it was admitted here: its free tokens let storage price before claiming it. */
  reservation?: Reservation;
  /**
   * Output the vendor produced after a refused slice: recorded, never billed (docs/architecture.md#holds-that-grow).
   */
  unbilledTokens?: number;
  /** `usage` is the vendor's own report (not the gateway's count of a reply it never reported): calibration learns from it. */
  vendorReported?: boolean;
}

/**
 * A settlement's outcome: settled, found settled before, journaled (on disk) because the store could not take it,
 * or neither: the journal could not be written either, and the settlement waits in memory for one of them.
 */
export type SettlementOutcome = SettleResult | { settled: false; reason: 'journaled' | 'journal_unavailable' };

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
 * The tokenizer counts with OpenAI's encoding; other vendors' tokenizers count somewhat more for the same text. The
 * count is first calibrated to the model's vendor (input-calibration.ts); the margin then covers one prompt's spread
 * around that ratio, so the charge almost never exceeds the hold; settlement charges the vendor's count.
 */
const INPUT_ESTIMATE_MARGIN = 1.15;
const INPUT_ESTIMATE_FLOOR = 16;
const SETTLEMENT_ATTEMPTS = 4;
/**
 * What the upper bound's plan answers (as a refusal, so that the repository writes nothing) when it cannot stand
 * for the tokenizer's: admit then counts the prompt and reserves again. Never shown to a client.
 */
const NEEDS_TOKENIZER_COUNT = 'tollgate:admission-needs-tokenizer-count';
/** What `retry-after` suggests while the journal cannot be written: an operator has to act, so not too eager. */
const JOURNAL_RETRY_AFTER_SECONDS = 10;

/** The hold's input tokens for a count of the prompt: the margin for other vendors' tokenizers, and a floor. */
function withMargin(inputTokens: number): number {
  return Math.ceil(inputTokens * INPUT_ESTIMATE_MARGIN) + INPUT_ESTIMATE_FLOOR;
}

/**
 * The least money any request on a model of these prices holds at admission: a one-token prompt (with the margin and
 * floor) at the worst-case input price, and one output token. A key's limit with less than this left refuses every
 * paid request until it resets, however small: the dashboard says "limit reached" from here, not only at 100 %.
 */
export function smallestAdmissionHold(prices: ModelPrices): bigint {
  return BigInt(withMargin(1)) * inputPrice({ prices }) + prices.output;
}

export class BillingService {
  /** Holds of requests in flight here, renewed so that the sweeper never releases the hold of a long stream. */
  private readonly liveHolds: LiveHolds;
  private readonly calibration: InputCalibration;

  constructor(
    private readonly repository: BillingRepository,
    private readonly settings: BillingSettings,
    private readonly now: () => number = Date.now,
    /** Where settlements the store refuses go; without one, a refused settlement throws. */
    private readonly journal?: SettlementJournal,
  ) {
    this.calibration = settings.calibration ?? new InputCalibration();
    this.liveHolds = new LiveHolds(repository, settings, now);
  }

  /**
   * Takes the request's worst-case hold, or refuses with the 403 `insufficient_balance` saying what the balance covers.
   *
   * The hold is first planned with an upper bound of the tokenizer's count (UTF-8 bytes, without the tokenizer:
   * measured 0.1 µs instead of 5 µs for a two-message prompt, and a gateway serving a rich account stays at
   * ~117 MB RSS instead of ~170 MB, the tokenizer's tables never loaded). Fewer input tokens can only lower the
   * hold and raise what the balance covers, so when the bound's plan admits with the output limit the tokenizer's
   * plan would give (the client's own, or the model's: an affordability cap could only loosen), the tokenizer's
   * plan would admit with that same limit: the request is admitted exactly as it would be, only with a larger
   * hold (see below). Otherwise (a refusal, or an output capped at what the account can afford)
   * the prompt is counted with the tokenizer and planned again, exactly as before, so refusals, their figures
   * and output caps are the tokenizer's. The plan runs under the wallet row's lock (for SQLite inside a batch
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
  async admit(
    requestId: string,
    auth: AuthenticatedKey,
    model: PricedModel,
    request: CanonicalRequest,
    promptTokens?: number,
  ): Promise<Reservation> {
    this.refuseWithoutJournal();
    const now = this.now();
    const input: Omit<ReserveInput, 'plan'> = {
      requestId,
      accountId: auth.organisation.id,
      apiKeyId: auth.key.id,
      day: utcDayNumber(now),
      freeAllowanceTokens: this.settings.freeTokensPerDay,
      createdAt: now,
      expiresAt: now + this.settings.reservationTtlMs,
      ...(auth.money === undefined ? {} : { accountHint: auth.money }),
    };
    const oneHourCacheWrites = carriesOneHourBreakpoint(request);
    const choices = choiceCount(request);
    const ratio = this.calibration.ratio(model.id, model.family);
    const admission = (inputTokens: number): AdmissionRequest => ({
      inputTokens: withMargin(calibratedTokens(inputTokens, ratio)),
      // Each choice of a request for several may run to the limit: the hold may grow to that many times it.
      clientMaxOutputTokens: request.maxOutputTokens === undefined ? undefined : request.maxOutputTokens * choices,
      modelMaxOutputTokens: model.maxOutputTokens * choices,
      firstSliceTokens: outputSliceOf(model),
      prices: model.prices,
      oneHourCacheWrites,
      webSearches: {
        wanted: webSearchesHeld(request.serverTools, model),
        priceNano: model.prices.webSearchRequest ?? 0n,
        required: forcesWebSearch(request),
      },
    });
    const bound = admission(upperBoundRequestInputTokens(request));
    const boundPlan = (state: AdmissionState): AdmissionPlan => {
      const plan = planAdmission(bound, state);
      // The whole first slice (not one cut to what the account can afford): the tokenizer's plan gives the same.
      const tokenizersOutput = plan.admitted && plan.maxOutputTokens === firstSliceOf(bound);
      return tokenizersOutput ? plan : { admitted: false, reason: NEEDS_TOKENIZER_COUNT };
    };
    // With the account's money read with the key (PostgreSQL), an account the bound will not settle goes straight
    // to the tokenizer's count: one reservation, as before, instead of a refused one first (a locked transaction
    // of 3 round trips). Only the path depends on this possibly older read, never the outcome.
    const boundWillNotDo =
      auth.money !== undefined && !decideAdmission(auth.money, { ...input, plan: boundPlan }).plan.admitted;
    let localInputTokens = promptTokens;
    let result = boundWillNotDo ? undefined : await this.repository.reserve({ ...input, plan: boundPlan });
    if (result === undefined || (!result.admitted && result.reason === NEEDS_TOKENIZER_COUNT)) {
      await loadTokenizer();
      localInputTokens ??= estimateRequestInputTokens(request);
      const precise = admission(localInputTokens);
      result = await this.repository.reserve({ ...input, plan: (state) => planAdmission(precise, state) });
    }
    if (!result.admitted) {
      const limit = result.state.spendLimit;
      if (limit?.binding === true) throw spendLimitReached(limit, now);
      throw new GatewayError('insufficient_balance', await this.withHolds(result.reason, auth.organisation.id, now));
    }
    this.liveHolds.set(requestId, {
      admittedAt: now,
      expiresAt: now + this.settings.reservationTtlMs,
      checkpointedOutput: -1,
      // Only a count admission made anyway: a rich account's prompt is never tokenized just to calibrate.
      ...(localInputTokens === undefined ? {} : { localInputTokens, modelId: model.id }),
    });
    this.liveHolds.renewRegularly();
    // Its slices count against the limits over its key too (docs/billing.md#spend-limits): grantSlice needs the key.
    result.reservation.apiKeyId = auth.key.id;
    return result.reservation;
  }

  /**
   * While the journal cannot be written, a settlement the store refuses would live only in this process's memory:
   * every admission is refused, requests the free allowance covers whole included, since each of them settles too
   * (its usage record and the allowance it takes from the day) and would be lost the same way. Nothing is held or
   * sent to a vendor; requests that settle nothing (model lists, token counts, the dashboard) are unaffected.
   */
  private refuseWithoutJournal(): void {
    const unavailable = this.journal?.unavailable();
    if (unavailable === undefined) return;
    throw new GatewayError(
      'settlement_journal_unavailable',
      // The system's error code only: the directory and its error are the operator's, in the log and /readyz.
      `The settlement journal cannot be written (${unavailable.code ?? 'write failed'}); paid requests are refused until it can. Please retry later.`,
      { retryAfterSeconds: JOURNAL_RETRY_AFTER_SECONDS, cause: unavailable.error },
    );
  }

  /**
   * A refusal's text with what the account's requests in flight hold (docs/architecture.md#holds-that-grow): a balance
   * held by others reads as held, not as gone. One more storage call, on refusals only.
   */
  private async withHolds(reason: string, accountId: string, now: number): Promise<string> {
    const holds = await this.repository
      .holds(accountId, utcDayNumber(now), this.settings.freeTokensPerDay)
      .catch(() => null);
    if (holds === null) return reason;
    const inFlight =
      holds.holds === 0
        ? 'no request of the account is in flight'
        : holds.holds === 1
          ? `1 request in flight holds $${formatUsd(holds.reservedNano)} of it until it finishes`
          : `${holds.holds} requests in flight hold $${formatUsd(holds.reservedNano)} of it until they finish`;
    return `${reason} The balance is $${formatUsd(holds.balanceNano)}; ${inFlight}. Top up the balance in the dashboard, or retry when requests in flight have finished.`;
  }

  /**
   * Tells the periodic batch what the request has delivered (called once, when its reply starts): each tick writes
   * a checkpoint for it when its output moved since the last one.
   */
  track(requestId: string, delivered: () => HoldCheckpoint | undefined): void {
    this.liveHolds.track(requestId, delivered);
  }

  /**
   * One more slice of output for a live request (docs/architecture.md#holds-that-grow): one atomic conditional storage
   * call, which also renews the hold and writes its checkpoint. The reservation is grown in place, so settlement and
   * the journal price with the free tokens the hold now carries. `whole`: all `tokens` or none (planSliceGrant).
   */
  async grantSlice(
    reservation: Reservation,
    model: PricedModel,
    tokens: number,
    checkpoint: HoldCheckpoint | undefined,
    whole = false,
  ): Promise<SliceOutcome> {
    const now = this.now();
    const expiresAt = now + this.settings.reservationTtlMs;
    const result = await this.repository.grantSlice({
      requestId: reservation.requestId,
      accountId: reservation.accountId,
      ...(reservation.apiKeyId === undefined ? {} : { apiKeyId: reservation.apiKeyId }),
      day: utcDayNumber(now),
      at: now,
      freeAllowanceTokens: this.settings.freeTokensPerDay,
      tokens,
      outputPriceNano: model.prices.output,
      plan: (state) => planSliceGrant(tokens, model.prices.output, state, whole),
      expiresAt,
      ...(checkpoint === undefined ? {} : { checkpoint }),
    });
    if (!result.granted) return { granted: false, reason: result.reason };
    reservation.holdNano += result.holdNano;
    reservation.freeTokens += result.freeTokens;
    reservation.limitHoldNano += result.limitHoldNano ?? 0n;
    reservation.maxOutputTokens += result.tokens;
    const hold = this.liveHolds.get(reservation.requestId);
    if (hold !== undefined) {
      hold.expiresAt = Math.max(hold.expiresAt, expiresAt);
      if (checkpoint !== undefined && result.checkpointDeferred !== true)
        hold.checkpointedOutput = checkpoint.outputTokens;
    }
    return { granted: true, tokens: result.tokens };
  }

  /**
   * Settles exactly once: the repository's unique request id makes a retry after a storage fault a no-op
   * when the first attempt had in fact committed, so a fault never bills twice and never loses the record.
   * A settlement the store cannot take (unreachable, or failing every attempt) goes to the journal, on disk
   * before this resolves, and is replayed by `replayJournal`; its hold stays renewed until then.
   */
  async settle(input: SettlementInput): Promise<SettlementOutcome> {
    const localInputTokens = this.calibrationSample(input);
    if (localInputTokens !== undefined)
      this.calibration.observe(input.model.id, input.model.family, localInputTokens, totalInputTokens(input.usage));
    const entry: JournalEntry = {
      usage: { ...this.usageRecord(input), ...(localInputTokens === undefined ? {} : { localInputTokens }) },
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
            const onDisk = await this.journal.append({ ...entry, journaledAt: this.now() });
            return { settled: false, reason: onDisk ? 'journaled' : 'journal_unavailable' };
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
   * The tokenizer's count of the prompt when the settlement is a calibration sample: the vendor reported the usage and
   * admission counted the prompt, for the same model. Kept on the usage record so a starting gateway seeds from it.
   */
  private calibrationSample(input: SettlementInput): number | undefined {
    const hold = this.liveHolds.get(input.requestId);
    if (input.vendorReported !== true || hold?.modelId !== input.model.id) return undefined;
    return hold.localInputTokens;
  }

  /** The ratio admission multiplies the model's local prompt count by (input-calibration.ts). */
  inputRatio(model: Pick<PricedModel, 'id' | 'family'>): number {
    return this.calibration.ratio(model.id, model.family);
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
    return this.repository.settle({
      usage,
      price: (room) => splitUsage(usage, prices, room, serverToolFees(usage)),
      freeAllowanceTokens: this.settings.freeTokensPerDay,
      ...(entry.heldFreeTokens === undefined ? {} : { heldFreeTokens: entry.heldFreeTokens }),
    });
  }

  private usageRecord(input: SettlementInput): UsageRecord {
    return {
      requestId: input.requestId,
      accountId: input.auth.organisation.id,
      apiKeyId: input.auth.key.id,
      model: input.model.id,
      family: input.model.family,
      inputTokens: input.usage.inputTokens,
      cacheReadTokens: input.usage.cacheReadTokens,
      cacheWriteTokens: input.usage.cacheWriteTokens,
      cacheWrite1hTokens: input.usage.cacheWrite1hTokens,
      outputTokens: input.usage.outputTokens,
      reasoningTokens: input.usage.reasoningTokens,
      status: input.status,
      stream: input.stream,
      latencyMs: Math.max(0, this.now() - input.startedAt),
      createdAt: input.startedAt,
      rawUsage: boundedRawUsage(input.rawUsage),
      costNano: 0n,
      freeTokens: 0,
      unbilledNano: 0n,
      ...(input.route === undefined ? {} : { route: input.route }),
      ...(input.unbilledTokens === undefined || input.unbilledTokens === 0
        ? {}
        : { unbilledTokens: input.unbilledTokens }),
      ...serverToolFields(input.usage, input.model.prices),
    };
  }

  /**
   * Claims holds of requests that never settled (a crashed instance) once expired: each with a checkpoint is
   * settled at it (input plus the output delivered by then, status `instance_lost`), each without is released.
   */
  sweepExpired(): Promise<SweepResult> {
    return this.repository.sweepExpiredReservations(this.now(), (hold) => this.orphanSettlement(hold));
  }

  private orphanSettlement(hold: OrphanedHold): ReturnType<OrphanBiller> {
    const checkpoint = hold.checkpoint;
    if (checkpoint === null) return undefined;
    const prices = this.settings.pricesOf?.(checkpoint.model);
    // A model no longer in the catalog has no price to bill with: released, as before checkpoints.
    if (prices === undefined) return undefined;
    const usage: CanonicalUsage = {
      inputTokens: checkpoint.inputTokens,
      cacheReadTokens: checkpoint.cacheReadTokens,
      cacheWriteTokens: checkpoint.cacheWriteTokens,
      cacheWrite1hTokens: checkpoint.cacheWrite1hTokens,
      outputTokens: checkpoint.outputTokens,
      reasoningTokens: 0,
    };
    return {
      usage: {
        requestId: hold.requestId,
        accountId: hold.accountId,
        apiKeyId: hold.apiKeyId,
        model: checkpoint.model,
        family: checkpoint.family,
        ...usage,
        status: 'instance_lost',
        stream: checkpoint.stream,
        latencyMs: Math.max(0, checkpoint.at - hold.createdAt),
        createdAt: hold.createdAt,
        rawUsage: null,
        costNano: 0n,
        freeTokens: 0,
        unbilledNano: 0n,
      },
      price: (room) => splitUsage(usage, prices, room),
      freeAllowanceTokens: this.settings.freeTokensPerDay,
    };
  }
}
