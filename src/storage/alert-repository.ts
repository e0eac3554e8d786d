import type { Kysely, Selectable, Updateable } from 'kysely';
import type {
  AlertChannel,
  AlertDeliveriesTable,
  AlertDelivery,
  AlertFiring,
  AlertFiringsTable,
  AlertKind,
  AlertRepository,
  AlertRule,
  AlertRulesTable,
  AlertTables,
  LimitPeriod,
  LimitScope,
} from './alert-types.js';
import type { Database } from './database-schema.js';
import { fromMoneyColumn, money } from './money-sql.js';
import { writeTransaction } from './transactions.js';
import type { Storage } from './types.js';
import { randomHex } from '../ids/random-hex.js';

export function createAlertRepository(base: Kysely<Database>, dialect: Storage['dialect']): AlertRepository {
  const db = base.withTables<AlertTables>();

  const selectRules = () =>
    db
      .selectFrom('alert_rules')
      .select([
        'alert_rules.id',
        'alert_rules.organisation_id',
        'alert_rules.kind',
        money('alert_rules.amount_nano').as('amount_nano'),
        'alert_rules.threshold_percent',
        'alert_rules.scope',
        'alert_rules.scope_id',
        'alert_rules.period',
        'alert_rules.email_enabled',
        'alert_rules.email_to',
        'alert_rules.webhook_url',
        'alert_rules.webhook_secret',
        'alert_rules.armed_at',
        'alert_rules.created_by',
        'alert_rules.created_at',
        'alert_rules.updated_at',
      ]);

  const repository: AlertRepository = {
    async createRule(rule) {
      await db
        .insertInto('alert_rules')
        .values({
          id: rule.id,
          organisation_id: rule.organisationId,
          kind: rule.kind,
          amount_nano: rule.amountNano === null ? null : rule.amountNano.toString(),
          threshold_percent: rule.thresholdPercent,
          scope: rule.scope,
          scope_id: rule.scopeId,
          period: rule.period,
          email_enabled: rule.emailEnabled ? 1 : 0,
          email_to: rule.emailTo === null ? null : JSON.stringify(rule.emailTo),
          webhook_url: rule.webhookUrl,
          webhook_secret: rule.webhookSecret,
          armed_at: rule.createdAt,
          created_by: rule.createdBy,
          created_at: rule.createdAt,
          updated_at: rule.createdAt,
        })
        .execute();
      return { ...rule, armedAt: rule.createdAt, updatedAt: rule.createdAt };
    },

    async listRules(organisationId) {
      const rows = await selectRules()
        .where('organisation_id', '=', organisationId)
        .orderBy('created_at')
        .orderBy('id')
        .execute();
      return rows.map(toRule);
    },

    async findRule(organisationId, id) {
      const row = await selectRules()
        .where('organisation_id', '=', organisationId)
        .where('id', '=', id)
        .executeTakeFirst();
      return row === undefined ? null : toRule(row);
    },

    async updateRule(organisationId, id, changes, now) {
      const values: Updateable<AlertRulesTable> = { updated_at: now };
      if (changes.amountNano !== undefined)
        values.amount_nano = changes.amountNano === null ? null : changes.amountNano.toString();
      if (changes.thresholdPercent !== undefined) values.threshold_percent = changes.thresholdPercent;
      if (changes.scope !== undefined) values.scope = changes.scope;
      if (changes.scopeId !== undefined) values.scope_id = changes.scopeId;
      if (changes.period !== undefined) values.period = changes.period;
      if (changes.emailEnabled !== undefined) values.email_enabled = changes.emailEnabled ? 1 : 0;
      if (changes.emailTo !== undefined)
        values.email_to = changes.emailTo === null ? null : JSON.stringify(changes.emailTo);
      if (changes.webhookUrl !== undefined) values.webhook_url = changes.webhookUrl;
      const result = await db
        .updateTable('alert_rules')
        .set(values)
        .where('organisation_id', '=', organisationId)
        .where('id', '=', id)
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) !== 1) return null;
      return repository.findRule(organisationId, id);
    },

    async deleteRule(organisationId, id) {
      const rule = await repository.findRule(organisationId, id);
      if (rule === null) return null;
      const result = await db
        .deleteFrom('alert_rules')
        .where('organisation_id', '=', organisationId)
        .where('id', '=', id)
        .executeTakeFirst();
      return Number(result.numDeletedRows) === 1 ? rule : null;
    },

    async limitThresholdRules(organisationIds) {
      if (organisationIds !== null && organisationIds.length === 0) return [];
      let query = selectRules().where('kind', '=', 'limit_threshold');
      if (organisationIds !== null) query = query.where('organisation_id', 'in', [...organisationIds]);
      const rows = await query.orderBy('organisation_id').orderBy('id').execute();
      return rows.map(toRule);
    },

    async hasFired(ruleId, periodStart) {
      const row = await db
        .selectFrom('alert_firings')
        .select('id')
        .where('rule_id', '=', ruleId)
        .where('period_start', '=', periodStart)
        .executeTakeFirst();
      return row !== undefined;
    },

    async lowBalanceCandidates(organisationIds) {
      if (organisationIds !== null && organisationIds.length === 0) return [];
      let query = selectRules()
        .innerJoin('organisations', 'organisations.id', 'alert_rules.organisation_id')
        .leftJoin('alert_firings', (join) =>
          join
            .onRef('alert_firings.rule_id', '=', 'alert_rules.id')
            .onRef('alert_firings.period_start', '=', 'alert_rules.armed_at'),
        )
        .select([money('organisations.balance_nano').as('balance_nano'), 'alert_firings.id as firing_id'])
        .where('alert_rules.kind', '=', 'low_balance');
      if (organisationIds !== null) query = query.where('alert_rules.organisation_id', 'in', [...organisationIds]);
      const rows = await query.orderBy('alert_rules.id').execute();
      return rows.map((row) => ({
        rule: toRule(row),
        balanceNano: fromMoneyColumn(row.balance_nano),
        firedThisPeriod: row.firing_id !== null,
      }));
    },

    async fire(firing, channels) {
      return writeTransaction(base, dialect, async (trx) => {
        const tx = trx.withTables<AlertTables>();
        // The unique (rule_id, period_start) decides between instances: only the insert that lands fires.
        const inserted = await tx
          .insertInto('alert_firings')
          .values({
            id: firing.id,
            rule_id: firing.ruleId,
            organisation_id: firing.organisationId,
            period_start: firing.periodStart,
            fired_at: firing.firedAt,
            payload: firing.payload,
          })
          .onConflict((conflict) => conflict.columns(['rule_id', 'period_start']).doNothing())
          .returning('id')
          .executeTakeFirst();
        if (inserted === undefined) return false;
        for (const channel of channels) {
          await tx
            .insertInto('alert_deliveries')
            .values({
              id: `adl_${randomHex(12)}`,
              firing_id: firing.id,
              rule_id: firing.ruleId,
              organisation_id: firing.organisationId,
              channel,
              status: 'pending',
              attempts: 0,
              status_code: null,
              error: null,
              next_attempt_at: firing.firedAt,
              lease_owner: null,
              lease_expires_at: null,
              delivered_at: null,
              created_at: firing.firedAt,
            })
            .execute();
        }
        return true;
      });
    },

    async rearm(ruleId, armedAt, now) {
      // Conditional on the period it read: of two instances seeing the balance recover, one moves it on.
      const result = await db
        .updateTable('alert_rules')
        .set({ armed_at: Math.max(now, armedAt + 1) })
        .where('id', '=', ruleId)
        .where('armed_at', '=', armedAt)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) === 1;
    },

    async claimDue(owner, now, leaseMs, limit) {
      const due = await db
        .selectFrom('alert_deliveries')
        .select('id')
        .where('status', '=', 'pending')
        .where('next_attempt_at', '<=', now)
        .where((eb) => eb.or([eb('lease_expires_at', 'is', null), eb('lease_expires_at', '<', now)]))
        .orderBy('next_attempt_at')
        .limit(limit)
        .execute();
      const claimed = [];
      for (const { id } of due) {
        const result = await db
          .updateTable('alert_deliveries')
          .set({ lease_owner: owner, lease_expires_at: now + leaseMs })
          .where('id', '=', id)
          .where('status', '=', 'pending')
          .where((eb) => eb.or([eb('lease_expires_at', 'is', null), eb('lease_expires_at', '<', now)]))
          .executeTakeFirst();
        if (Number(result.numUpdatedRows) !== 1) continue;
        const row = await db
          .selectFrom('alert_deliveries')
          .innerJoin('alert_firings', 'alert_firings.id', 'alert_deliveries.firing_id')
          .selectAll('alert_deliveries')
          .select('alert_firings.payload')
          .where('alert_deliveries.id', '=', id)
          .executeTakeFirstOrThrow();
        const rule = await selectRules().where('id', '=', row.rule_id).executeTakeFirst();
        claimed.push({
          delivery: toDelivery(row),
          payload: row.payload,
          rule: rule === undefined ? null : toRule(rule),
        });
      }
      return claimed;
    },

    async recordAttempt(id, owner, attempt) {
      const status = attempt.delivered ? 'delivered' : attempt.nextAttemptAt === null ? 'failed' : 'pending';
      const result = await db
        .updateTable('alert_deliveries')
        .set((eb) => ({
          status,
          attempts: eb('attempts', '+', 1),
          status_code: attempt.statusCode,
          error: attempt.error,
          next_attempt_at: attempt.delivered ? null : attempt.nextAttemptAt,
          delivered_at: attempt.delivered ? attempt.at : null,
          lease_owner: null,
          lease_expires_at: null,
        }))
        .where('id', '=', id)
        .where('lease_owner', '=', owner)
        .where('status', '=', 'pending')
        .executeTakeFirst();
      return Number(result.numUpdatedRows) === 1;
    },

    async recentFirings(organisationId, limit) {
      const rows = await db
        .selectFrom('alert_firings')
        .selectAll()
        .where('organisation_id', '=', organisationId)
        .orderBy('fired_at', 'desc')
        .orderBy('id', 'desc')
        .limit(limit)
        .execute();
      return rows.map(toFiring);
    },

    async recentDeliveries(organisationId, limit) {
      const rows = await db
        .selectFrom('alert_deliveries')
        .selectAll()
        .where('organisation_id', '=', organisationId)
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .limit(limit)
        .execute();
      return rows.map(toDelivery);
    },
  };
  return repository;
}

type RuleRow = Omit<Selectable<AlertRulesTable>, 'amount_nano'> & { amount_nano: string | null };

function toRule(row: RuleRow): AlertRule {
  return {
    id: row.id,
    organisationId: row.organisation_id,
    kind: row.kind as AlertKind,
    amountNano: row.amount_nano === null ? null : fromMoneyColumn(row.amount_nano),
    thresholdPercent: row.threshold_percent === null ? null : Number(row.threshold_percent),
    scope: row.scope as LimitScope | null,
    scopeId: row.scope_id,
    period: row.period as LimitPeriod | null,
    emailEnabled: Number(row.email_enabled) === 1,
    emailTo: row.email_to === null ? null : (JSON.parse(row.email_to) as string[]),
    webhookUrl: row.webhook_url,
    webhookSecret: row.webhook_secret,
    armedAt: Number(row.armed_at),
    createdBy: row.created_by,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

function toFiring(row: Selectable<AlertFiringsTable>): AlertFiring {
  return {
    id: row.id,
    ruleId: row.rule_id,
    organisationId: row.organisation_id,
    periodStart: Number(row.period_start),
    firedAt: Number(row.fired_at),
    payload: row.payload,
  };
}

function toDelivery(row: Selectable<AlertDeliveriesTable>): AlertDelivery {
  return {
    id: row.id,
    firingId: row.firing_id,
    ruleId: row.rule_id,
    organisationId: row.organisation_id,
    channel: row.channel as AlertChannel,
    status: row.status as AlertDelivery['status'],
    attempts: Number(row.attempts),
    statusCode: row.status_code === null ? null : Number(row.status_code),
    error: row.error,
    nextAttemptAt: row.next_attempt_at === null ? null : Number(row.next_attempt_at),
    deliveredAt: row.delivered_at === null ? null : Number(row.delivered_at),
    createdAt: Number(row.created_at),
  };
}
