import { randomBytes } from 'node:crypto';
import { invalidRequest } from '../canonical/errors.js';
import { randomHex } from '../ids/random-hex.js';
import {
  LIMIT_PERIODS,
  LIMIT_SCOPES,
  type AlertKind,
  type AlertRepository,
  type AlertRule,
  type AlertRuleChanges,
  type LimitPeriod,
  type LimitScope,
} from '../storage/alert-types.js';
import { checkedAddresses, type ResolveAll } from '../telemetry/webhooks/guarded-lookup.js';
import { webhookUrlProblem } from '../telemetry/webhooks/url-policy.js';

/** A rule as a person asks for it; the routes parse JSON into this, the service checks what needs the world. */
export interface AlertRuleInput {
  kind: AlertKind;
  amountNano?: bigint | undefined;
  thresholdPercent?: number | undefined;
  scope?: string | undefined;
  scopeId?: string | null | undefined;
  period?: string | undefined;
  emailEnabled?: boolean | undefined;
  emailTo?: string[] | null | undefined;
  webhookUrl?: string | null | undefined;
}

export type AlertRuleUpdate = Omit<AlertRuleInput, 'kind'>;

export interface AlertRulesOptions {
  alerts: AlertRepository;
  /** http:// to loopback allowed (testing), as for every outbound webhook. */
  allowHttpLoopback: boolean;
  /** Whether the organisation has a key (or project) with this id: a rule on its limit must name one. */
  scopeExists: (organisationId: string, scope: 'project' | 'key', id: string) => Promise<boolean>;
  now: () => number;
  /** A rule changed: evaluate the organisation's rules soon (a new rule on a low balance fires at once). */
  onChange?: (organisationId: string) => void;
  resolveAll?: ResolveAll;
}

/** The most rules an organisation keeps: evaluation reads them all on every pass. */
export const MAX_RULES_PER_ORGANISATION = 50;

/**
 * An organisation's alert rules: create, change and delete them with every field checked first (a bad one is a 400
 * naming it, and nothing is written). A webhook URL must be https:// and resolve to public addresses only; its
 * signing secret is made here and returned once, with the created rule.
 */
export class AlertRules {
  constructor(private readonly options: AlertRulesOptions) {}

  list(organisationId: string): Promise<AlertRule[]> {
    return this.options.alerts.listRules(organisationId);
  }

  async create(organisationId: string, createdBy: string | null, input: AlertRuleInput): Promise<AlertRule> {
    const target = await this.checkTarget(organisationId, input.kind, input);
    const channels = await this.checkChannels(input);
    if ((await this.options.alerts.listRules(organisationId)).length >= MAX_RULES_PER_ORGANISATION)
      throw invalidRequest(`An organisation keeps at most ${MAX_RULES_PER_ORGANISATION} alert rules.`, 'kind');
    const webhookUrl = channels.webhookUrl ?? null;
    const rule = await this.options.alerts.createRule({
      id: `alr_${randomHex(12)}`,
      organisationId,
      kind: input.kind,
      ...target,
      emailEnabled: channels.emailEnabled ?? false,
      emailTo: channels.emailTo ?? null,
      webhookUrl,
      webhookSecret: webhookUrl === null ? null : newSigningSecret(),
      createdBy,
      createdAt: this.options.now(),
    });
    this.options.onChange?.(organisationId);
    return rule;
  }

  /** The rule before and after; null when the organisation has no such rule. */
  async update(
    organisationId: string,
    id: string,
    input: AlertRuleUpdate,
  ): Promise<{ before: AlertRule; after: AlertRule } | null> {
    const before = await this.options.alerts.findRule(organisationId, id);
    if (before === null) return null;
    const merged: AlertRuleInput = {
      kind: before.kind,
      amountNano: input.amountNano ?? before.amountNano ?? undefined,
      thresholdPercent: input.thresholdPercent ?? before.thresholdPercent ?? undefined,
      scope: input.scope ?? before.scope ?? undefined,
      scopeId: input.scopeId === undefined ? before.scopeId : input.scopeId,
      period: input.period ?? before.period ?? undefined,
    };
    const target = await this.checkTarget(organisationId, before.kind, merged);
    const channels = await this.checkChannels(input);
    const changes: AlertRuleChanges = { ...target, ...channels };
    // A new webhook URL keeps the secret: receivers verify with the one they were shown.
    if (channels.webhookUrl !== undefined && channels.webhookUrl !== null && before.webhookSecret === null)
      throw invalidRequest('Add a webhook by creating a rule: its signing secret is shown once, then.', 'webhookUrl');
    const after = await this.options.alerts.updateRule(organisationId, id, changes, this.options.now());
    if (after === null) return null;
    this.options.onChange?.(organisationId);
    return { before, after };
  }

  delete(organisationId: string, id: string): Promise<AlertRule | null> {
    return this.options.alerts.deleteRule(organisationId, id);
  }

  private async checkTarget(
    organisationId: string,
    kind: AlertKind,
    input: Omit<AlertRuleInput, 'kind'>,
  ): Promise<Pick<AlertRule, 'amountNano' | 'thresholdPercent' | 'scope' | 'scopeId' | 'period'>> {
    if (kind === 'low_balance') {
      if (input.amountNano === undefined || input.amountNano <= 0n)
        throw invalidRequest('A low-balance alert needs an amount above 0.', 'amountUsd');
      return { amountNano: input.amountNano, thresholdPercent: null, scope: null, scopeId: null, period: null };
    }
    const percent = input.thresholdPercent;
    if (percent === undefined || !Number.isInteger(percent) || percent < 1 || percent > 100)
      throw invalidRequest('A threshold is a whole percentage from 1 to 100.', 'thresholdPercent');
    const scope = LIMIT_SCOPES.find((each) => each === input.scope);
    if (scope === undefined) throw invalidRequest(`The scope is one of ${LIMIT_SCOPES.join(', ')}.`, 'scope');
    const period = LIMIT_PERIODS.find((each) => each === input.period);
    if (period === undefined) throw invalidRequest(`The period is one of ${LIMIT_PERIODS.join(', ')}.`, 'period');
    const scopeId = await this.checkScopeId(organisationId, scope, input.scopeId ?? null);
    return { amountNano: null, thresholdPercent: percent, scope, scopeId, period: period as LimitPeriod };
  }

  /** The organisation's own limit needs no id (it is the organisation); a key's names one of its keys. */
  private async checkScopeId(organisationId: string, scope: LimitScope, scopeId: string | null): Promise<string> {
    if (scope === 'organisation') return organisationId;
    if (scopeId === null || scopeId === '')
      throw invalidRequest(`A ${scope} limit's alert names the ${scope} (scopeId).`, 'scopeId');
    if (!(await this.options.scopeExists(organisationId, scope, scopeId)))
      throw invalidRequest(`The organisation has no ${scope} with this id.`, 'scopeId');
    return scopeId;
  }

  private async checkChannels(input: AlertRuleUpdate): Promise<AlertRuleChanges> {
    const channels: AlertRuleChanges = {};
    if (input.emailEnabled !== undefined) channels.emailEnabled = input.emailEnabled;
    if (input.emailTo !== undefined)
      channels.emailTo = input.emailTo === null || input.emailTo.length === 0 ? null : input.emailTo;
    if (input.webhookUrl !== undefined) {
      if (input.webhookUrl !== null) await this.checkWebhookUrl(input.webhookUrl);
      channels.webhookUrl = input.webhookUrl;
    }
    return channels;
  }

  /** The URL policy, then every address the host resolves to now (each connection checks again). */
  private async checkWebhookUrl(url: string): Promise<void> {
    const policy = { allowHttpLoopback: this.options.allowHttpLoopback };
    const problem = webhookUrlProblem(url, policy);
    if (problem !== null) throw invalidRequest(`The webhook URL ${problem}.`, 'webhookUrl');
    const hostname = new URL(url).hostname.replace(/^\[|\]$/g, '');
    try {
      await checkedAddresses(hostname, { allowLoopback: policy.allowHttpLoopback }, this.options.resolveAll);
    } catch (error) {
      const reason = (error as Error).message;
      throw invalidRequest(`The webhook URL is refused: ${reason}.`, 'webhookUrl');
    }
  }
}

/** 32 random bytes, prefixed so a person recognises what it is. */
function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}
