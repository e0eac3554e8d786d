import { MS_PER_DAY } from '../billing/free-allowance.js';
import { randomHex } from '../ids/random-hex.js';
import type { AlertChannel, AlertRepository, AlertRule } from '../storage/alert-types.js';
import { spendPeriodFirstDay } from '../storage/key-permission-types.js';
import type { SpendLimitRecord, SpendLimitRepository } from '../storage/spend-limit-types.js';
import { limitThresholdEvent, lowBalanceEvent } from './alert-payload.js';

export interface EvaluationResult {
  /** Firings this evaluation recorded (another instance's are not counted). */
  fired: number;
  /** Low-balance rules it moved to a new period after the balance recovered. */
  rearmed: number;
  /** The organisations among those evaluated that have at least one rule. */
  organisationsWithRules: Set<string>;
}

/**
 * Decides which rules fire, off the request path. The database decides between instances: a firing is one insert
 * under the unique (rule, period start), so evaluations racing on several instances fire a rule once per period.
 */
export class AlertEvaluator {
  constructor(
    private readonly alerts: AlertRepository,
    private readonly limits: Pick<SpendLimitRepository, 'list'>,
    private readonly options: { mailConfigured: boolean; now: () => number },
  ) {}

  /** Evaluates the rules of these organisations (every organisation's when null). */
  async evaluate(organisationIds: readonly string[] | null): Promise<EvaluationResult> {
    const result: EvaluationResult = { fired: 0, rearmed: 0, organisationsWithRules: new Set() };
    const candidates = await this.alerts.lowBalanceCandidates(organisationIds);
    for (const { rule, balanceNano, firedThisPeriod } of candidates) {
      result.organisationsWithRules.add(rule.organisationId);
      if (rule.amountNano === null) continue;
      const now = this.options.now();
      if (balanceNano < rule.amountNano && !firedThisPeriod) {
        const id = `alt_${randomHex(12)}`;
        const payload = JSON.stringify(lowBalanceEvent(id, rule, balanceNano, now));
        const fired = await this.alerts.fire(
          {
            id,
            ruleId: rule.id,
            organisationId: rule.organisationId,
            periodStart: rule.armedAt,
            firedAt: now,
            payload,
          },
          this.channelsOf(rule),
        );
        if (fired) result.fired += 1;
      } else if (balanceNano >= rule.amountNano && firedThisPeriod) {
        // Back at or above the amount: a new period starts, and the next fall fires again.
        if (await this.alerts.rearm(rule.id, rule.armedAt, now)) result.rearmed += 1;
      }
    }
    const thresholdRules = await this.alerts.limitThresholdRules(organisationIds);
    for (const rule of thresholdRules) result.organisationsWithRules.add(rule.organisationId);
    result.fired += await this.evaluateLimitThresholds(thresholdRules);
    return result;
  }

  /** Each rule whose limit's settled spend this period has reached its share fires once for the period. */
  private async evaluateLimitThresholds(rules: readonly AlertRule[]): Promise<number> {
    const limitsOf = new Map<string, SpendLimitRecord[]>();
    let fired = 0;
    for (const rule of rules) {
      if (rule.thresholdPercent === null || rule.period === null) continue;
      const now = this.options.now();
      let limits = limitsOf.get(rule.organisationId);
      if (limits === undefined) {
        limits = await this.limits.list(rule.organisationId, now);
        limitsOf.set(rule.organisationId, limits);
      }
      const limit = limits.find(
        (each) => each.scope === rule.scope && each.scopeId === rule.scopeId && each.period === rule.period,
      );
      // No such limit (not set, or cleared): nothing to reach.
      if (limit === undefined || limit.limitNano <= 0n) continue;
      if (limit.usedNano * 100n < limit.limitNano * BigInt(rule.thresholdPercent)) continue;
      const periodStart = (spendPeriodFirstDay(rule.period, now) ?? 0) * MS_PER_DAY;
      if (await this.alerts.hasFired(rule.id, periodStart)) continue;
      const id = `alt_${randomHex(12)}`;
      const payload = JSON.stringify(limitThresholdEvent(id, rule, { ...limit, periodStart }, now));
      const inserted = await this.alerts.fire(
        { id, ruleId: rule.id, organisationId: rule.organisationId, periodStart, firedAt: now, payload },
        this.channelsOf(rule),
      );
      if (inserted) fired += 1;
    }
    return fired;
  }

  /** Mail only when the gateway can send it; a webhook whenever the rule has one. */
  private channelsOf(rule: AlertRule): AlertChannel[] {
    const channels: AlertChannel[] = [];
    if (rule.emailEnabled && this.options.mailConfigured) channels.push('email');
    if (rule.webhookUrl !== null && rule.webhookSecret !== null) channels.push('webhook');
    return channels;
  }
}
