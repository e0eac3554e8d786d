import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AlertRuleInput } from '../../alerts/alert-rules.js';
import { formatUsd, parseUsd } from '../../billing/money.js';
import type { AlertDelivery, AlertFiring, AlertRule } from '../../storage/alert-types.js';
import { byPerson } from './audit-actor.js';
import { parseInput } from './body-parsing.js';
import type { DashboardDependencies } from './dashboard-dependencies.js';
import { notFound } from './dashboard-error.js';
import { currentAccount, currentOrganisation } from './dashboard-session.js';

const READ = { config: { permission: 'organisation:read' } } as const;
/** Owners, admins and billing members decide who hears about the money. */
const MANAGE = { config: { permission: 'alerts:manage' } } as const;

const usdAmount = z
  .string()
  .regex(/^\d{1,12}(\.\d{1,9})?$/, 'An amount is a USD decimal such as "10" or "2.50".')
  .transform((text) => parseUsd(text));
const addresses = z
  .array(z.email('Each address must be an email address.').max(254))
  .max(20, 'At most 20 addresses.')
  .nullable();
// Plain strings here: the service names the field of a bad scope or period, in its own words.
const channelFields = {
  amountUsd: usdAmount.optional(),
  thresholdPercent: z.number().optional(),
  scope: z.string().max(40).optional(),
  scopeId: z.string().max(200).nullable().optional(),
  period: z.string().max(40).optional(),
  emailEnabled: z.boolean().optional(),
  emailTo: addresses.optional(),
  webhookUrl: z.string().max(2_000).nullable().optional(),
};
const createBody = z
  .object({
    kind: z.enum(['low_balance', 'limit_threshold'], 'The kind is low_balance or limit_threshold.'),
    ...channelFields,
  })
  .strict();
const updateBody = z.object(channelFields).strict();

type IdParams = { Params: { id: string } };

/** A webhook URL as the page shows it: without its query, which may carry a receiver's token. */
function shownUrl(url: string | null): string | null {
  if (url === null) return null;
  const parsed = new URL(url);
  return `${parsed.origin}${parsed.pathname}`;
}

export function presentAlertRule(rule: AlertRule) {
  return {
    id: rule.id,
    kind: rule.kind,
    amountUsd: rule.amountNano === null ? null : formatUsd(rule.amountNano),
    thresholdPercent: rule.thresholdPercent,
    scope: rule.scope,
    scopeId: rule.scopeId,
    period: rule.period,
    emailEnabled: rule.emailEnabled,
    emailTo: rule.emailTo,
    webhookUrl: shownUrl(rule.webhookUrl),
    armedAt: rule.armedAt,
    createdAt: rule.createdAt,
    updatedAt: rule.updatedAt,
  };
}

function presentFiring(firing: AlertFiring) {
  const event = JSON.parse(firing.payload) as { type?: string; balance_usd?: string; spent_usd?: string };
  return {
    id: firing.id,
    ruleId: firing.ruleId,
    type: event.type ?? null,
    periodStart: firing.periodStart,
    firedAt: firing.firedAt,
    balanceUsd: event.balance_usd ?? null,
    spentUsd: event.spent_usd ?? null,
  };
}

function presentDelivery(delivery: AlertDelivery) {
  return {
    id: delivery.id,
    firingId: delivery.firingId,
    ruleId: delivery.ruleId,
    channel: delivery.channel,
    status: delivery.status,
    attempts: delivery.attempts,
    statusCode: delivery.statusCode,
    error: delivery.error,
    nextAttemptAt: delivery.nextAttemptAt,
    deliveredAt: delivery.deliveredAt,
    createdAt: delivery.createdAt,
  };
}

/** What the audit log keeps of a rule: what a person set, never the signing secret. */
const ruleSnapshot = (rule: AlertRule) => presentAlertRule(rule);

function ruleInput(body: z.output<typeof updateBody>): Omit<AlertRuleInput, 'kind'> {
  return {
    amountNano: body.amountUsd,
    thresholdPercent: body.thresholdPercent,
    scope: body.scope,
    scopeId: body.scopeId,
    period: body.period,
    emailEnabled: body.emailEnabled,
    emailTo: body.emailTo,
    webhookUrl: body.webhookUrl,
  };
}

/**
 * `/api/alerts`: the organisation's budget alert rules, their recent firings and deliveries (every member reads),
 * and rules created, changed and deleted by owners, admins and billing members (docs/budget-alerts.md).
 */
export function registerAlertRoutes(api: FastifyInstance, deps: DashboardDependencies): void {
  api.get('/alerts', READ, async (request) => {
    const organisationId = currentOrganisation(request).organisation.id;
    const [rules, firings, deliveries] = await Promise.all([
      deps.alertRules.list(organisationId),
      deps.alertHistory.recentFirings(organisationId, 50),
      deps.alertHistory.recentDeliveries(organisationId, 50),
    ]);
    return {
      rules: rules.map(presentAlertRule),
      firings: firings.map(presentFiring),
      deliveries: deliveries.map(presentDelivery),
    };
  });

  api.get('/alerts/deliveries', READ, async (request) => {
    const organisationId = currentOrganisation(request).organisation.id;
    const deliveries = await deps.alertHistory.recentDeliveries(organisationId, 200);
    return { deliveries: deliveries.map(presentDelivery) };
  });

  api.post('/alerts/rules', MANAGE, async (request, reply) => {
    const body = parseInput(createBody, request.body);
    const organisationId = currentOrganisation(request).organisation.id;
    const rule = await deps.alertRules.create(organisationId, currentAccount(request).id, {
      kind: body.kind,
      ...ruleInput(body),
    });
    await deps.audit.record({
      organisationId,
      ...byPerson(request),
      action: 'alert.created',
      target: { type: 'alert', id: rule.id },
      before: null,
      after: ruleSnapshot(rule),
    });
    // The signing secret is in this answer only: receivers verify with it, and no later answer carries it.
    return reply.code(201).send({ rule: presentAlertRule(rule), webhookSecret: rule.webhookSecret });
  });

  api.patch<IdParams>('/alerts/rules/:id', MANAGE, async (request) => {
    const body = parseInput(updateBody, request.body);
    const organisationId = currentOrganisation(request).organisation.id;
    const changed = await deps.alertRules.update(organisationId, request.params.id, ruleInput(body));
    if (changed === null) throw notFound('No such alert rule in this organisation.', 'id');
    await deps.audit.record({
      organisationId,
      ...byPerson(request),
      action: 'alert.updated',
      target: { type: 'alert', id: changed.after.id },
      before: ruleSnapshot(changed.before),
      after: ruleSnapshot(changed.after),
    });
    return { rule: presentAlertRule(changed.after) };
  });

  api.delete<IdParams>('/alerts/rules/:id', MANAGE, async (request) => {
    const organisationId = currentOrganisation(request).organisation.id;
    const deleted = await deps.alertRules.delete(organisationId, request.params.id);
    if (deleted === null) throw notFound('No such alert rule in this organisation.', 'id');
    await deps.audit.record({
      organisationId,
      ...byPerson(request),
      action: 'alert.deleted',
      target: { type: 'alert', id: deleted.id },
      before: ruleSnapshot(deleted),
      after: null,
    });
    return { deleted: true };
  });
}
