/**
 * Budget alerts end to end below HTTP, against SQLite and the real PostgreSQL: real settlements move the balance,
 * the evaluator fires, a real SMTP server receives the mail and a loopback HTTPS receiver the signed webhook.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  DAY,
  fundedAccountIn,
  NOW,
  plainUsage,
  uniqueId,
  type AccountIds,
} from '../../test/helpers/billing-contract-fixture.js';
import { startMailCatcher, type MailCatcher } from '../../test/helpers/mail-catcher.js';
import { costing } from '../../test/helpers/settlement-pricers.js';
import { postgresBackend, sqliteBackend, type TestDatabase } from '../../test/helpers/storage-backends.js';
import {
  selfSignedCertificate,
  startWebhookReceiver,
  type WebhookReceiver,
} from '../../test/helpers/webhook-receiver.js';
import { createSmtpMailer, type Mailer } from '../identity/mailer.js';
import type { AlertRule, NewAlertRule } from '../storage/alert-types.js';
import type { Storage } from '../storage/types.js';
import { verifySignature } from '../telemetry/webhooks/webhook-signature.js';
import { WebhookSender } from '../telemetry/webhooks/webhook-sender.js';
import { AlertDeliveryWorker } from './alert-delivery-worker.js';
import { AlertEvaluator } from './alert-evaluator.js';
import type { AlertEvent } from './alert-payload.js';
import { DEFAULT_ALERT_SETTINGS, startAlerts } from './start-alerts.js';

const SECRET = 'whsec_test_secret_0123456789';
const quietLog = { warn: () => undefined, error: () => undefined };

describe.each([sqliteBackend, postgresBackend])('budget alerts on $name', (backend) => {
  let database: TestDatabase;
  let storage: Storage;
  let mail: MailCatcher;
  let mailer: Mailer;
  let receiver: WebhookReceiver;
  let sender: WebhookSender;
  let clock = NOW;
  const now = () => clock;
  const tls = selfSignedCertificate(['receiver.test']);

  beforeAll(async () => {
    database = await backend.createDatabase();
    storage = await database.open();
    await storage.migrate();
    mail = await startMailCatcher();
    mailer = createSmtpMailer(mail.url, 'alerts@tollgate.test');
    receiver = await startWebhookReceiver({ tls });
    sender = new WebhookSender({
      policy: { allowHttpLoopback: true },
      maxAttempts: 1,
      baseDelayMs: 0,
      maxDelayMs: 0,
      timeoutMs: 5_000,
      concurrency: 4,
      ca: tls.cert,
    });
  });

  afterAll(async () => {
    await sender?.close();
    mailer?.close();
    await receiver?.close();
    await mail?.close();
    await storage?.close();
    await database?.drop();
  });

  const evaluator = (on = storage) => new AlertEvaluator(on.alerts, on.spendLimits, { mailConfigured: true, now });
  const worker = (owner = 'instance-a') =>
    new AlertDeliveryWorker({
      alerts: storage.alerts,
      organisations: storage.organisations,
      sender,
      mailer,
      owner,
      retry: { maxAttempts: 3, baseDelayMs: 1_000, maxDelayMs: 10_000 },
      leaseMs: 60_000,
      now,
      // The highest jitter: the retry is due exactly at the ceiling, so the test knows when.
      random: () => 0.999_999,
    });

  async function spend(ids: AccountIds, nano: bigint): Promise<void> {
    const reserved = await storage.billing.reserve({
      requestId: uniqueId('req'),
      accountId: ids.accountId,
      apiKeyId: ids.keyId,
      day: DAY,
      freeAllowanceTokens: 0,
      createdAt: clock,
      expiresAt: clock + 60_000,
      plan: () => ({ admitted: true, holdNano: nano, freeTokens: 0, maxOutputTokens: 100 }),
    });
    if (!reserved.admitted) throw new Error('not admitted');
    const requestId = reserved.reservation.requestId;
    await storage.billing.settle({
      freeAllowanceTokens: 0,
      usage: plainUsage(requestId, ids, clock),
      price: costing(nano),
    });
  }

  async function lowBalanceRule(
    ids: AccountIds,
    amountNano: bigint,
    channels: Partial<Pick<NewAlertRule, 'emailEnabled' | 'emailTo' | 'webhookUrl'>> = {},
  ): Promise<AlertRule> {
    return storage.alerts.createRule({
      id: uniqueId('alr'),
      organisationId: ids.accountId,
      kind: 'low_balance',
      amountNano,
      thresholdPercent: null,
      scope: null,
      scopeId: null,
      period: null,
      emailEnabled: channels.emailEnabled ?? false,
      emailTo: channels.emailTo ?? null,
      webhookUrl: channels.webhookUrl ?? null,
      webhookSecret: channels.webhookUrl === undefined ? null : SECRET,
      createdBy: ids.accountId,
      createdAt: clock,
    });
  }

  it('fires once when the balance falls below the amount, mails the owner and posts a signed webhook', async () => {
    const ids = await fundedAccountIn(storage, 10_000n);
    const owner = (await storage.organisations.members(ids.accountId))[0]!;
    const rule = await lowBalanceRule(ids, 5_000n, { emailEnabled: true, webhookUrl: receiver.url });
    receiver.script([200]);
    const before = receiver.received.length;

    expect(await evaluator().evaluate([ids.accountId])).toMatchObject({ fired: 0, rearmed: 0 });
    await spend(ids, 6_000n);
    expect(await evaluator().evaluate([ids.accountId])).toMatchObject({ fired: 1, rearmed: 0 });
    expect(await evaluator().evaluate(null)).toMatchObject({ fired: 0, rearmed: 0 });
    expect(await worker().runDue()).toBe(2);

    const caught = await mail.next(owner.email, 0);
    expect(caught.subject).toContain('balance is below $0.000005');
    expect(caught.text).toContain('$0.000004');
    const delivered = receiver.received.slice(before);
    expect(delivered).toHaveLength(1);
    const { body, headers } = delivered[0]!;
    expect(verifySignature(String(headers['tollgate-signature']), body, SECRET)).toBe(true);
    expect(verifySignature(String(headers['tollgate-signature']), body, 'another secret')).toBe(false);
    const event = JSON.parse(body) as AlertEvent;
    expect(event).toMatchObject({
      type: 'alert.low_balance',
      organisation_id: ids.accountId,
      rule: { id: rule.id, kind: 'low_balance', amount_usd: '0.000005' },
      balance_usd: '0.000004',
      period_start: rule.armedAt,
    });
    const deliveries = await storage.alerts.recentDeliveries(ids.accountId, 10);
    expect(deliveries.map((delivery) => [delivery.channel, delivery.status, delivery.attempts])).toEqual(
      expect.arrayContaining([
        ['email', 'delivered', 1],
        ['webhook', 'delivered', 1],
      ]),
    );
    expect(deliveries.find((delivery) => delivery.channel === 'webhook')?.statusCode).toBe(200);
    expect(headers['idempotency-key']).toBe(deliveries.find((delivery) => delivery.channel === 'webhook')?.id);
  });

  it('re-arms after a top-up brings the balance back, then fires again on the next fall', async () => {
    const ids = await fundedAccountIn(storage, 10_000n);
    const rule = await lowBalanceRule(ids, 5_000n, { emailTo: ['finance@example.com'], emailEnabled: true });
    await spend(ids, 6_000n);
    expect(await evaluator().evaluate([ids.accountId])).toMatchObject({ fired: 1, rearmed: 0 });
    await spend(ids, 1_000n);
    expect(await evaluator().evaluate([ids.accountId])).toMatchObject({ fired: 0, rearmed: 0 });
    await worker().runDue();
    expect((await mail.next('finance@example.com', 0)).subject).toContain('below');

    clock += 60_000;
    await storage.billing.credit({
      accountId: ids.accountId,
      kind: 'topup',
      amountNano: 20_000n,
      idempotencyKey: uniqueId('topup'),
      note: null,
      at: clock,
    });
    expect(await evaluator().evaluate([ids.accountId])).toMatchObject({ fired: 0, rearmed: 1 });
    expect(await evaluator().evaluate([ids.accountId])).toMatchObject({ fired: 0, rearmed: 0 });
    expect((await storage.alerts.findRule(ids.accountId, rule.id))?.armedAt).toBe(clock);

    clock += 60_000;
    await spend(ids, 20_000n);
    expect(await evaluator().evaluate([ids.accountId])).toMatchObject({ fired: 1, rearmed: 0 });
    const firings = await storage.alerts.recentFirings(ids.accountId, 10);
    expect(firings.map((firing) => firing.periodStart)).toEqual([clock - 60_000, rule.armedAt]);
    await worker().runDue();
    expect(mail.to('finance@example.com')).toHaveLength(2);
  });

  it('fires exactly once when settlements and evaluations race on several instances', async () => {
    const ids = await fundedAccountIn(storage, 100_000n);
    await lowBalanceRule(ids, 50_000n, { webhookUrl: receiver.url });
    // PostgreSQL: each instance its own pool; SQLite: instances in one process share the handle (its lock is
    // synchronous), and their reads and inserts still interleave on it.
    const instances =
      backend.name === 'postgres' ? await Promise.all([database.open(), database.open(), database.open()]) : [];
    try {
      const evaluators = [storage, ...instances].map((on) => evaluator(on));
      const results = await Promise.all(
        Array.from({ length: 8 }, async (_, index) => {
          await spend(ids, 7_000n);
          return evaluators[index % evaluators.length]!.evaluate([ids.accountId]);
        }),
      );
      const again = await Promise.all(evaluators.map((each) => each.evaluate(null)));
      const fired = [...results, ...again].reduce((sum, result) => sum + result.fired, 0);
      expect(fired).toBe(1);
      expect(await storage.alerts.recentFirings(ids.accountId, 10)).toHaveLength(1);
      expect(await storage.alerts.recentDeliveries(ids.accountId, 10)).toHaveLength(1);
      expect(await worker().runDue()).toBe(1);
    } finally {
      await Promise.all(instances.map((instance) => instance.close()));
    }
  });

  it('retries a webhook the receiver answered 500, with backoff, and keeps each attempt visible', async () => {
    const ids = await fundedAccountIn(storage, 10_000n);
    await lowBalanceRule(ids, 20_000n, { webhookUrl: receiver.url });
    receiver.script([500, 200]);
    const before = receiver.received.length;
    await evaluator().evaluate([ids.accountId]);
    expect(await worker().runDue()).toBe(1);
    let [delivery] = await storage.alerts.recentDeliveries(ids.accountId, 10);
    expect(delivery).toMatchObject({ status: 'pending', attempts: 1, statusCode: 500, deliveredAt: null });
    expect(delivery?.error).toMatch(/500/);
    // Due within the first backoff (1 s with this jitter), not before.
    expect(delivery?.nextAttemptAt).toBe(clock + 999);
    expect(await worker().runDue()).toBe(0);
    clock += 1_000;
    // Another instance takes it up: the queue is the table, not this worker's memory.
    expect(await worker('instance-b').runDue()).toBe(1);
    [delivery] = await storage.alerts.recentDeliveries(ids.accountId, 10);
    expect(delivery).toMatchObject({ status: 'delivered', attempts: 2, statusCode: 200, deliveredAt: clock });
    const received = receiver.received.slice(before);
    expect(received.map((each) => each.status)).toEqual([500, 200]);
    expect(received[0]?.body).toBe(received[1]?.body);
  });

  it('gives up after the last attempt, and at once on a refusal that waiting will not change', async () => {
    const ids = await fundedAccountIn(storage, 10_000n);
    await lowBalanceRule(ids, 20_000n, { webhookUrl: receiver.url });
    receiver.script([503]);
    await evaluator().evaluate([ids.accountId]);
    for (let attempt = 0; attempt < 3; attempt += 1) {
      await worker().runDue();
      clock += 10_000;
    }
    let [delivery] = await storage.alerts.recentDeliveries(ids.accountId, 10);
    expect(delivery).toMatchObject({ status: 'failed', attempts: 3, statusCode: 503, nextAttemptAt: null });

    const refusing = await fundedAccountIn(storage, 10_000n);
    await lowBalanceRule(refusing, 20_000n, { webhookUrl: receiver.url });
    receiver.script([410]);
    await evaluator().evaluate([refusing.accountId]);
    await worker().runDue();
    [delivery] = await storage.alerts.recentDeliveries(refusing.accountId, 10);
    expect(delivery).toMatchObject({ status: 'failed', attempts: 1, statusCode: 410 });
    receiver.script([200]);
  });

  it('keeps firings and deliveries of a deleted rule, and fails its pending delivery', async () => {
    const ids = await fundedAccountIn(storage, 10_000n);
    const rule = await lowBalanceRule(ids, 20_000n, { webhookUrl: receiver.url });
    await evaluator().evaluate([ids.accountId]);
    expect((await storage.alerts.deleteRule(ids.accountId, rule.id))?.id).toBe(rule.id);
    expect(await storage.alerts.deleteRule(ids.accountId, rule.id)).toBeNull();
    await worker().runDue();
    const [delivery] = await storage.alerts.recentDeliveries(ids.accountId, 10);
    expect(delivery).toMatchObject({ status: 'failed', error: 'the rule was deleted' });
    expect(await storage.alerts.recentFirings(ids.accountId, 10)).toHaveLength(1);
    expect(await storage.alerts.listRules(ids.accountId)).toEqual([]);
  });

  it('fires a limit threshold once per period when settled spend reaches the share, and again next period', async () => {
    const ids = await fundedAccountIn(storage, 1_000_000n);
    await storage.spendLimits.set({
      organisationId: ids.accountId,
      scope: 'organisation',
      scopeId: ids.accountId,
      period: 'day',
      limitNano: 10_000n,
      at: clock,
    });
    const rule = await storage.alerts.createRule({
      id: uniqueId('alr'),
      organisationId: ids.accountId,
      kind: 'limit_threshold',
      amountNano: null,
      thresholdPercent: 80,
      scope: 'organisation',
      scopeId: ids.accountId,
      period: 'day',
      emailEnabled: false,
      emailTo: null,
      webhookUrl: receiver.url,
      webhookSecret: SECRET,
      createdBy: null,
      createdAt: clock,
    });
    receiver.script([200]);
    const before = receiver.received.length;
    await spend(ids, 7_000n);
    expect(await evaluator().evaluate([ids.accountId])).toMatchObject({ fired: 0, rearmed: 0 });
    await spend(ids, 1_000n);
    expect(await evaluator().evaluate([ids.accountId])).toMatchObject({ fired: 1, rearmed: 0 });
    await spend(ids, 1_000n);
    expect(await evaluator().evaluate(null)).toMatchObject({ fired: 0, rearmed: 0 });
    await worker().runDue();
    const [delivered] = receiver.received.slice(before);
    expect(verifySignature(String(delivered?.headers['tollgate-signature']), delivered?.body ?? '', SECRET)).toBe(true);
    const dayStart = Math.floor(clock / 86_400_000) * 86_400_000;
    expect(JSON.parse(delivered?.body ?? '{}')).toMatchObject({
      type: 'alert.limit_threshold',
      rule: { id: rule.id, threshold_percent: 80, scope: 'organisation', period: 'day' },
      period_start: dayStart,
      spent_usd: '0.000008',
      limit_usd: '0.00001',
    });

    // The next UTC day starts from nothing spent: below the share, nothing; at it, a second firing.
    clock = dayStart + 86_400_000 + 1_000;
    expect(await evaluator().evaluate([ids.accountId])).toMatchObject({ fired: 0, rearmed: 0 });
    await spend(ids, 9_000n);
    expect(await evaluator().evaluate([ids.accountId])).toMatchObject({ fired: 1, rearmed: 0 });
    const firings = await storage.alerts.recentFirings(ids.accountId, 10);
    expect(firings.map((firing) => firing.periodStart)).toEqual([dayStart + 86_400_000, dayStart]);
    await worker().runDue();
  });

  it('updates a rule of its own organisation only', async () => {
    const ids = await fundedAccountIn(storage, 10_000n);
    const other = await fundedAccountIn(storage, 10_000n);
    const rule = await lowBalanceRule(ids, 1_000n);
    expect(await storage.alerts.updateRule(other.accountId, rule.id, { amountNano: 2n }, clock)).toBeNull();
    const updated = await storage.alerts.updateRule(
      ids.accountId,
      rule.id,
      { amountNano: 2_000n, emailTo: ['a@b.c'] },
      clock + 1,
    );
    expect(updated).toMatchObject({
      amountNano: 2_000n,
      emailTo: ['a@b.c'],
      updatedAt: clock + 1,
      webhookSecret: null,
    });
    expect(await storage.alerts.listRules(other.accountId)).toEqual([]);
  });

  it("evaluates after a settlement only the organisations with rules, and learns a new rule's at once", async () => {
    const withRule = await fundedAccountIn(storage, 10_000n);
    const without = await fundedAccountIn(storage, 10_000n);
    await lowBalanceRule(withRule, 1_000n);
    // The real repository, with a note of which organisations each rule query asked for (null: every one).
    const asked: (readonly string[] | null)[] = [];
    const alerts = new Proxy(storage.alerts, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver);
        if (name !== 'lowBalanceCandidates' || typeof value !== 'function') return value;
        return (organisationIds: readonly string[] | null) => {
          asked.push(organisationIds === null ? null : [...organisationIds]);
          return value.call(target, organisationIds);
        };
      },
    });
    const running = startAlerts(
      { ...DEFAULT_ALERT_SETTINGS, nudgeDelayMs: 1, evaluateIntervalMs: 3_600_000, allowHttpLoopback: true },
      {
        alerts,
        limits: storage.spendLimits,
        organisations: storage.organisations,
        mailer: undefined,
        log: quietLog,
        now,
      },
    );
    try {
      await vi.waitFor(() => expect(asked).toHaveLength(1)); // the evaluation of every rule at start
      expect(asked).toEqual([null]);
      running.nudge(without.accountId);
      running.nudge(withRule.accountId);
      await vi.waitFor(() => expect(asked).toHaveLength(2));
      running.nudge(without.accountId);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(asked.slice(1)).toEqual([[withRule.accountId]]);
      // A rule created on this instance: its organisation is evaluated, and its settlements from then on.
      await lowBalanceRule(without, 1_000n);
      running.ruleChanged(without.accountId);
      await vi.waitFor(() => expect(asked).toHaveLength(3));
      running.nudge(without.accountId);
      await vi.waitFor(() => expect(asked).toHaveLength(4));
      expect(asked.slice(2)).toEqual([[without.accountId], [without.accountId]]);
    } finally {
      await running.close();
    }
  });
});
