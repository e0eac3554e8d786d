import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifySignature } from '../../src/telemetry/webhooks/webhook-signature.js';
import { DashboardClient, PASSWORD, uniqueEmail } from '../helpers/dashboard-client.js';
import { startMailCatcher, type MailCatcher } from '../helpers/mail-catcher.js';
import { team, type Team } from '../helpers/organisation-team.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * Budget alerts through the shipped gateway: the dashboard's rule API (roles, checks naming the field, the audit
 * log, the secret shown once), and a low-balance rule that a real request's settlement sets off, mailed to a real
 * SMTP server and posted, signed and retried after a 500, to a loopback receiver.
 */

async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('alert rules API', () => {
  let harness: TestGateway;
  let crew: Team;

  beforeAll(async () => {
    harness = await startTestGateway({ env: { WEBHOOK_ALLOW_HTTP_LOOPBACK: 'true' } });
    crew = await team(harness.gateway.url);
  }, 120_000);

  afterAll(async () => {
    await harness?.close();
  });

  const rulesOf = async () => (await harness.gateway.storage.alerts.listRules(crew.organisationId)).map((r) => r.id);

  it('refuses a bad field with a 400 naming it, and stores nothing', async () => {
    const { client } = crew.members.owner;
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ kind: 'low_balance', amountUsd: '5', webhookUrl: 'http://hooks.example.com/alerts' }, 'webhookUrl'],
      [{ kind: 'low_balance', amountUsd: '5', webhookUrl: 'https://10.0.0.5/alerts' }, 'webhookUrl'],
      [{ kind: 'low_balance', amountUsd: '5', webhookUrl: 'https://[::ffff:192.168.1.10]/' }, 'webhookUrl'],
      [{ kind: 'low_balance', amountUsd: '5', webhookUrl: 'https://localhost.localdomain.invalid/' }, 'webhookUrl'],
      [{ kind: 'low_balance', amountUsd: 'five' }, 'amountUsd'],
      [{ kind: 'low_balance', amountUsd: '0' }, 'amountUsd'],
      [{ kind: 'limit_threshold', thresholdPercent: 0, scope: 'organisation', period: 'month' }, 'thresholdPercent'],
      [{ kind: 'limit_threshold', thresholdPercent: 101, scope: 'organisation', period: 'month' }, 'thresholdPercent'],
      [{ kind: 'limit_threshold', thresholdPercent: 80, scope: 'team', period: 'month' }, 'scope'],
      [{ kind: 'limit_threshold', thresholdPercent: 80, scope: 'organisation', period: 'year' }, 'period'],
      [
        { kind: 'limit_threshold', thresholdPercent: 80, scope: 'key', scopeId: 'key_missing', period: 'day' },
        'scopeId',
      ],
      [
        { kind: 'limit_threshold', thresholdPercent: 80, scope: 'project', scopeId: 'prj_missing', period: 'week' },
        'scopeId',
      ],
      [{ kind: 'low_balance', amountUsd: '5', emailTo: ['not an address'] }, 'emailTo.0'],
      [{ kind: 'budget', amountUsd: '5' }, 'kind'],
    ];
    for (const [body, field] of cases) {
      const reply = await client.post('/api/alerts/rules', body);
      expect({ body, status: reply.status, field: reply.json.error?.field }).toEqual({ body, status: 400, field });
      expect(reply.json.error.message).toEqual(expect.any(String));
    }
    expect(await rulesOf()).toEqual([]);
  });

  it('lets owners, admins and billing members manage rules, every member read them, and audits each change', async () => {
    const created = await crew.members.billing.client.post('/api/alerts/rules', {
      kind: 'low_balance',
      amountUsd: '2.5',
      emailEnabled: true,
      webhookUrl: 'http://127.0.0.1:9/alerts?token=abc',
    });
    expect(created.status).toBe(201);
    const secret = created.json.webhookSecret as string;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(created.json.rule).toMatchObject({ kind: 'low_balance', amountUsd: '2.5', emailEnabled: true });
    // The query may hold the receiver's token: the page shows the URL without it.
    expect(created.json.rule.webhookUrl).toBe('http://127.0.0.1:9/alerts');
    const id = created.json.rule.id as string;

    for (const role of ['viewer', 'developer'] as const) {
      const { client } = crew.members[role];
      const read = await client.get('/api/alerts');
      expect(read.status).toBe(200);
      expect(read.json.rules.map((rule: { id: string }) => rule.id)).toEqual([id]);
      expect(read.text).not.toContain(secret);
      for (const refused of [
        await client.post('/api/alerts/rules', { kind: 'low_balance', amountUsd: '1' }),
        await client.call('PATCH', `/api/alerts/rules/${id}`, { amountUsd: '1' }),
        await client.call('DELETE', `/api/alerts/rules/${id}`),
      ]) {
        expect(refused.status).toBe(403);
        expect(refused.json.error.code).toBe('role_forbids');
      }
    }
    expect(await rulesOf()).toEqual([id]);

    const updated = await crew.members.admin.client.call('PATCH', `/api/alerts/rules/${id}`, {
      amountUsd: '3',
      emailTo: [],
    });
    expect(updated.status).toBe(200);
    expect(updated.json.rule).toMatchObject({ amountUsd: '3', emailTo: null });
    const badUpdate = await crew.members.admin.client.call('PATCH', `/api/alerts/rules/${id}`, {
      webhookUrl: 'ftp://x/',
    });
    expect(badUpdate.status).toBe(400);
    expect(badUpdate.json.error.field).toBe('webhookUrl');
    const missing = await crew.members.owner.client.call('PATCH', '/api/alerts/rules/alr_missing', { amountUsd: '3' });
    expect(missing.status).toBe(404);
    const deleted = await crew.members.owner.client.call('DELETE', `/api/alerts/rules/${id}`);
    expect(deleted.status).toBe(200);
    expect(await rulesOf()).toEqual([]);

    const audit = await crew.members.owner.client.get('/api/audit?action=alert');
    expect(audit.status).toBe(200);
    const actions = audit.json.events.map((event: { action: string }) => event.action);
    expect(actions).toEqual(['alert.deleted', 'alert.updated', 'alert.created']);
    expect(JSON.stringify(audit.json.events)).not.toContain(secret);
  });

  it('needs the CSRF token to change a rule', async () => {
    const reply = await crew.members.owner.client.post(
      '/api/alerts/rules',
      { kind: 'low_balance', amountUsd: '1' },
      { csrf: false },
    );
    expect(reply.status).toBe(403);
    expect(await rulesOf()).toEqual([]);
  });
});

describe('low-balance alert delivered by the shipped gateway', () => {
  let harness: TestGateway;
  let mail: MailCatcher;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    mail = await startMailCatcher();
    receiver = await startWebhookReceiver({ statuses: [500, 200] });
    harness = await startTestGateway({
      env: {
        SMTP_URL: mail.url,
        MAIL_FROM: 'alerts@tollgate.test',
        PUBLIC_BASE_URL: 'http://127.0.0.1:1',
        REQUIRE_VERIFIED_EMAIL: 'false',
        WEBHOOK_ALLOW_HTTP_LOOPBACK: 'true',
        FREE_TOKENS_PER_DAY: '0',
        // Long enough that only the settlement's nudge can fire within the test; retries come quickly.
        ALERT_EVALUATE_INTERVAL_MS: '600000',
        ALERT_RETRY_BASE_MS: '200',
      },
    });
  }, 120_000);

  afterAll(async () => {
    await harness?.close();
    await receiver?.close();
    await mail?.close();
  });

  it('fires after the settlement that takes the balance below the amount, once, by mail and signed webhook', async () => {
    const email = uniqueEmail('alerts');
    const client = new DashboardClient(harness.gateway.url);
    const registered = await client.register(email, PASSWORD);
    expect(registered.status).toBe(201);
    const organisationId = registered.json.account.id as string;
    await harness.gateway.storage.billing.credit({
      accountId: organisationId,
      kind: 'topup',
      amountNano: 10_000_000n,
      idempotencyKey: `alerts-${organisationId}`,
      note: null,
      at: Date.now(),
    });
    // At the amount is not below it: nothing fires yet.
    const created = await client.post('/api/alerts/rules', {
      kind: 'low_balance',
      amountUsd: '0.01',
      emailEnabled: true,
      webhookUrl: receiver.url,
    });
    expect(created.status).toBe(201);
    const secret = created.json.webhookSecret as string;

    const key = (await harness.gateway.keys.create(organisationId, organisationId, { name: 'alerts' })).secret;
    const openai = new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
    await openai.chat.completions.create({
      model: 'beta-5.4',
      messages: [{ role: 'user', content: 'Say something short.' }],
      max_tokens: 16,
    });

    // The first mail is the address confirmation sent on registering.
    const caught = await mail.next(email, 1);
    expect(caught.subject).toMatch(/balance is below \$0\.01/);
    const page = await waitFor(
      async () => (await client.get('/api/alerts')).json,
      (json) => json.deliveries.every((delivery: { status: string }) => delivery.status === 'delivered'),
      'both deliveries',
    );
    expect(page.firings).toHaveLength(1);
    expect(page.firings[0]).toMatchObject({ type: 'alert.low_balance', ruleId: created.json.rule.id });
    const webhook = page.deliveries.find((delivery: { channel: string }) => delivery.channel === 'webhook');
    expect(webhook).toMatchObject({ status: 'delivered', attempts: 2, statusCode: 200, error: null });
    expect(receiver.received.map((each) => each.status)).toEqual([500, 200]);
    for (const { body, headers } of receiver.received) {
      expect(verifySignature(String(headers['tollgate-signature']), body, secret)).toBe(true);
      expect(JSON.parse(body)).toMatchObject({ type: 'alert.low_balance', organisation_id: organisationId });
    }

    // Another request, still below: no second firing, no second mail.
    await openai.chat.completions.create({
      model: 'beta-5.4',
      messages: [{ role: 'user', content: 'Again.' }],
      max_tokens: 16,
    });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect((await client.get('/api/alerts')).json.firings).toHaveLength(1);
    expect(mail.to(email)).toHaveLength(2);
  });
});
