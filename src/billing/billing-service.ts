import { estimateRequestInputTokens } from '../canonical/count-tokens.js';
import { GatewayError } from '../canonical/errors.js';
import type { CanonicalRequest } from '../canonical/request.js';
import type { CanonicalUsage } from '../canonical/usage.js';
import type { CatalogModel } from '../catalog/model-catalog.js';
import type { AuthenticatedKey } from '../keys/key-service.js';
import type { BillingRepository, Reservation, SettleResult } from '../storage/billing-types.js';
import { planAdmission } from './admission.js';
import { utcDayNumber } from './free-allowance.js';
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

/**
 * The tokenizer counts with OpenAI's encoding; other vendors' tokenizers count somewhat more for the same text.
 * The hold covers that difference so the charge almost never exceeds it; settlement charges the vendor's count.
 */
const INPUT_ESTIMATE_MARGIN = 1.15;
const INPUT_ESTIMATE_FLOOR = 16;
const SETTLEMENT_ATTEMPTS = 4;

export class BillingService {
  constructor(
    private readonly repository: BillingRepository,
    private readonly settings: BillingSettings,
    private readonly now: () => number = Date.now,
  ) {}

  /** Takes the request's worst-case hold, or refuses with the 403 of spec §5.5 saying what the balance covers. */
  async admit(requestId: string, auth: AuthenticatedKey, model: CatalogModel, request: CanonicalRequest): Promise<Reservation> {
    const now = this.now();
    const inputTokens = Math.ceil(estimateRequestInputTokens(request) * INPUT_ESTIMATE_MARGIN) + INPUT_ESTIMATE_FLOOR;
    const result = await this.repository.reserve({
      requestId,
      accountId: auth.account.id,
      apiKeyId: auth.key.id,
      day: utcDayNumber(now),
      freeAllowanceTokens: this.settings.freeTokensPerDay,
      createdAt: now,
      expiresAt: now + this.settings.reservationTtlMs,
      ...(auth.money === undefined ? {} : { accountHint: auth.money }),
      plan: (state) =>
        planAdmission(
          { inputTokens, clientMaxOutputTokens: request.maxOutputTokens, modelMaxOutputTokens: model.maxOutputTokens, prices: model.prices },
          state,
        ),
    });
    if (!result.admitted) throw new GatewayError('insufficient_balance', result.reason);
    return result.reservation;
  }

  /**
   * Settles exactly once: the repository's unique request id makes a retry after a storage fault a no-op
   * when the first attempt had in fact committed, so a fault never bills twice and never loses the record.
   */
  async settle(input: SettlementInput): Promise<SettleResult> {
    const record = {
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
    const price = (freeTokensHeld: number) => priceSettlement(input.usage, input.model.prices, freeTokensHeld);
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.repository.settle({ usage: record, price, ...(input.reservation === undefined ? {} : { heldFreeTokens: input.reservation.freeTokens }) });
      } catch (error) {
        if (attempt >= SETTLEMENT_ATTEMPTS) throw error;
        await new Promise((resolve) => setTimeout(resolve, 25 * 2 ** attempt));
      }
    }
  }

  /** Releases holds of requests that never settled (a crashed instance). */
  releaseExpired(): Promise<number> {
    return this.repository.releaseExpiredReservations(this.now());
  }
}
