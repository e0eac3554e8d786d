import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/keys/key-format.js';
import { BUILT_CLI } from '../helpers/cli-path.js';
import { DashboardClient, PASSWORD, uniqueEmail } from '../helpers/dashboard-client.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

/**
 * The audit log, receipts and billing details against the built gateway, on SQLite and PostgreSQL: every audited
 * action (dashboard, `/v1`, operator view, CLI, Stripe webhook) leaves exactly one event with its actor, address
 * and before/after, and no secret; filters, keyset pages and both exports; nothing of it visible to another
 * organisation; receipts carry the billing details and the exact amount, and only the organisation's own.
 */

const run = promisify(execFile);
const WEBHOOK_SECRET = 'whsec_test_tollgate_audit_secret';

type AuditEvent = {
  id: string;
  action: string;
  created_at: string;
  actor: { type: string; id: string | null; email: string | null; key_id: string | null };
  ip: string | null;
  target: { type: string; id: string } | null;
  before: unknown;
  after: unknown;
};

describe.each([{ database: 'sqlite' }, { database: 'postgres' }])('audit log on $database', ({ database }) => {
  let harness: TestGateway;
  let operator: DashboardClient;
  let operatorEmail: string;

  beforeAll(async () => {
    harness = await startTestGateway({
      postgres: database === 'postgres',
      vendors: ['openai'],
      env: { STRIPE_SECRET_KEY: 'sk_test_tollgate_not_a_real_key', STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET },
    });
    operatorEmail = uniqueEmail('operator');
    await harness.gateway.accounts.create({ email: operatorEmail, password: PASSWORD, role: 'admin' });
    operator = new DashboardClient(harness.gateway.url);
    expect((await operator.login(operatorEmail, PASSWORD)).status).toBe(200);
  }, 120_000);

  afterAll(async () => {
    await harness?.close();
  });

  async function person(prefix = 'member') {
    const client = new DashboardClient(harness.gateway.url);
    const email = uniqueEmail(prefix);
    const reply = await client.register(email, PASSWORD);
    expect(reply.status).toBe(201);
    return { client, email, accountId: reply.json.account.id as string };
  }

  async function events(client: DashboardClient, query = ''): Promise<AuditEvent[]> {
    const reply = await client.get(`/api/audit?limit=200${query}`);
    expect(reply.status).toBe(200);
    return reply.json.events;
  }

  async function cli(...args: string[]) {
    const { stdout } = await run(process.execPath, [BUILT_CLI, ...args, '--json'], {
      env: { ...process.env, ...harness.env },
    });
    return JSON.parse(stdout);
  }

  async function stripeTopUp(accountId: string, cents: number) {
    const payload = JSON.stringify({
      id: `evt_audit_${Date.now()}`,
      object: 'event',
      api_version: '2025-01-27.acacia',
      created: Math.floor(Date.now() / 1000),
      livemode: false,
      pending_webhooks: 1,
      request: { id: null, idempotency_key: null },
      type: 'checkout.session.completed',
      data: {
        object: {
          id: `cs_test_audit_${Date.now()}`,
          object: 'checkout.session',
          mode: 'payment',
          amount_total: cents,
          currency: 'usd',
          client_reference_id: accountId,
          metadata: { tollgate_account_id: accountId },
          payment_status: 'paid',
          status: 'complete',
        },
      },
    });
    const response = await fetch(`${harness.gateway.url}/api/stripe/webhook`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'stripe-signature': Stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }),
      },
      body: payload,
    });
    expect(await response.json()).toEqual({ received: true, result: 'credited' });
  }

  it('records each audited action exactly once, with actor, address and before/after, and never a secret', async () => {
    const { client, email, accountId } = await person();
    const secrets: string[] = [];

    // Keys in the dashboard: create, change, rotate, revoke.
    const created = await client.post('/api/keys', { name: 'laptop' });
    expect(created.status).toBe(201);
    secrets.push(created.json.secret);
    const keyId = created.json.key.id as string;
    expect(
      (await client.call('PATCH', `/api/keys/${keyId}`, { name: 'desk', spendLimit: { usd: '5', period: 'day' } }))
        .status,
    ).toBe(200);
    const rotated = await client.post(`/api/keys/${keyId}/rotate`);
    expect(rotated.status).toBe(201);
    secrets.push(rotated.json.secret);
    const rotatedId = rotated.json.key.id as string;

    // Keys through /v1 with the rotated key.
    const v1 = await fetch(`${harness.openaiBaseUrl}/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${rotated.json.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'ci', scopes: ['models:use'] }),
    });
    expect(v1.status).toBe(201);
    const v1Key = (await v1.json()) as { id: string; key: string };
    secrets.push(v1Key.key);
    expect((await client.post(`/api/keys/${v1Key.id}/revoke`)).status).toBe(200);

    // Money and tiers: an operator credit, a code, a card top-up, a tier bought, its renewal, an operator grant.
    expect((await operator.post(`/api/admin/accounts/${accountId}/credit`, { amountUsd: '21.5' })).status).toBe(200);
    const codes = await operator.post('/api/admin/codes', { amountUsd: '1.25', count: 1 });
    secrets.push(codes.json.codes[0]);
    expect((await client.post('/api/billing/redeem', { code: codes.json.codes[0] })).status).toBe(200);
    await stripeTopUp(accountId, 500);
    expect((await client.post('/api/tiers/buy', { tier: 'pro' })).status).toBe(200);
    expect((await client.post('/api/tiers/renewal', { renews: false })).status).toBe(200);
    expect((await operator.post(`/api/admin/accounts/${accountId}/tier`, { tier: 'enterprise' })).status).toBe(200);

    // The CLI: a credit and a key.
    expect((await cli('credit', '--email', email, '--usd', '2')).amount_usd).toBe('2');
    const cliKey = await cli('keys', 'create', '--email', email, '--name', 'from-cli');
    secrets.push(cliKey.key);

    // Settings: the name and the billing details.
    expect((await client.call('PUT', '/api/organisation/name', { name: ' Acme ' })).json).toEqual({ name: 'Acme' });
    expect((await client.call('PUT', '/api/organisation/name', { name: 'x'.repeat(101) })).status).toBe(400);
    const details = { billingName: 'Acme Labs Ltd', billingAddress: '1 Main Street\nSpringfield' };
    expect((await client.call('PUT', '/api/organisation/billing-details', details)).json).toEqual(details);

    const log = await events(client);
    const actions = log.map((event) => event.action).sort();
    expect(actions).toEqual(
      [
        'key.create',
        'key.update',
        'key.rotate',
        'key.create',
        'key.revoke',
        'money.credit',
        'money.redeem',
        'money.topup',
        'tier.purchase',
        'tier.renewal',
        'tier.grant',
        'money.credit',
        'key.create',
        'organisation.rename',
        'organisation.billing_details',
      ].sort(),
    );
    // Newest first.
    expect(log[0]!.action).toBe('organisation.billing_details');
    const only = (action: string, predicate: (event: AuditEvent) => boolean = () => true) => {
      const found = log.filter((event) => event.action === action && predicate(event));
      expect(found, action).toHaveLength(1);
      return found[0]!;
    };
    const me = { type: 'person', id: accountId, email, key_id: null };
    expect(only('key.create', (event) => event.target?.id === keyId)).toMatchObject({
      actor: me,
      ip: '127.0.0.1',
      before: null,
      after: { name: 'laptop', hint: created.json.key.hint, spendLimit: null, scopes: null },
    });
    expect(only('key.update')).toMatchObject({
      actor: me,
      target: { type: 'key', id: keyId },
      before: { name: 'laptop', spendLimit: null },
      after: { name: 'desk', spendLimit: { nanoUsd: '5000000000', period: 'day' } },
    });
    expect(only('key.rotate')).toMatchObject({
      actor: me,
      target: { type: 'key', id: keyId },
      before: { name: 'desk', revokedAt: null },
      after: { replacedBy: rotatedId, name: 'desk' },
    });
    expect(only('key.create', (event) => event.target?.id === v1Key.id)).toMatchObject({
      // Through a key: the person who created it, and the key; the call carries no email to record.
      actor: { type: 'person', id: accountId, email: null, key_id: rotatedId },
      ip: '127.0.0.1',
      after: { name: 'ci', scopes: ['models:use'] },
    });
    expect(only('key.revoke')).toMatchObject({
      actor: me,
      target: { type: 'key', id: v1Key.id },
      before: { revokedAt: null },
      after: { revokedAt: expect.any(Number) },
    });
    expect(
      only('money.credit', (event) => event.actor.type === 'operator' && event.actor.email !== null),
    ).toMatchObject({
      actor: { type: 'operator', email: operatorEmail },
      ip: '127.0.0.1',
      after: { amountNanoUsd: '21500000000' },
    });
    expect(only('money.redeem')).toMatchObject({ actor: me, after: { amountNanoUsd: '1250000000' } });
    expect(only('money.topup')).toMatchObject({
      actor: { type: 'system', id: 'stripe', email: null },
      target: { type: 'stripe_checkout_session' },
      after: { amountNanoUsd: '5000000000' },
    });
    expect(only('tier.purchase')).toMatchObject({
      actor: me,
      before: { tier: 'standard', bought: null },
      after: { tier: 'pro', bought: { tier: 'pro', renews: true } },
    });
    expect(only('tier.renewal')).toMatchObject({ after: { bought: { renews: false } } });
    expect(only('tier.grant')).toMatchObject({
      actor: { type: 'operator', email: operatorEmail },
      before: { grantedTier: 'standard' },
      after: { tier: 'enterprise', grantedTier: 'enterprise' },
    });
    expect(only('money.credit', (event) => event.actor.email === null)).toMatchObject({
      actor: { type: 'operator', id: null, email: null, key_id: null },
      ip: null,
      after: { amountNanoUsd: '2000000000' },
    });
    expect(only('key.create', (event) => event.actor.type === 'operator')).toMatchObject({
      target: { id: cliKey.id },
      after: { name: 'from-cli' },
    });
    expect(only('organisation.rename')).toMatchObject({
      actor: me,
      target: { type: 'organisation', id: accountId },
      before: { name: 'Personal' },
      after: { name: 'Acme' },
    });
    expect((await client.get('/api/organisation')).json.organisation.name).toBe('Acme');
    expect(only('organisation.billing_details')).toMatchObject({
      actor: me,
      ip: '127.0.0.1',
      target: { type: 'organisation', id: accountId },
      before: { billingName: null, billingAddress: null },
      after: details,
    });

    // No secret and no hash of one anywhere: not in the API, not in either export.
    const everything = [
      JSON.stringify(log),
      (await client.get('/api/audit/export?format=csv')).text,
      (await client.get('/api/audit/export?format=json')).text,
    ].join('\n');
    for (const secret of secrets) {
      expect(everything).not.toContain(secret);
      expect(everything).not.toContain(hashApiKey(secret));
    }
    expect(everything).not.toMatch(/keyHash|key_hash|codeHash/);
  });

  it('records invitations, joining, role changes, removal and leaving, each once with who did it', async () => {
    const owner = await person('owner');
    const joiner = await person('joiner');
    const leaver = await person('leaver');
    const invite = async (email: string, role: string) => {
      const reply = await owner.client.post('/api/organisation/invitations', { email, role });
      expect(reply.status).toBe(201);
      return {
        id: reply.json.invitation.id as string,
        token: new URL(reply.json.link.path, harness.gateway.url).searchParams.get('token')!,
      };
    };
    const first = await invite(joiner.email, 'viewer');
    const second = await invite(leaver.email, 'developer');
    const withdrawn = await invite(uniqueEmail('never'), 'viewer');
    const revoked = await owner.client.post(`/api/organisation/invitations/${withdrawn.id}/revoke`);
    expect(revoked.status, revoked.text).toBe(200);
    const accepted = await joiner.client.post('/api/invitations/accept', { token: first.token });
    expect(accepted.status, accepted.text).toBe(200);
    expect((await leaver.client.post('/api/invitations/accept', { token: second.token })).status).toBe(200);
    const member = (id: string) => `/api/organisation/members/${id}`;
    expect((await owner.client.call('PATCH', member(joiner.accountId), { role: 'admin' })).status).toBe(200);
    expect((await owner.client.call('DELETE', member(joiner.accountId))).status).toBe(200);
    expect((await leaver.client.post('/api/organisation/leave')).status).toBe(200);

    const log = await events(owner.client, '&action=member');
    const only = (action: string, target?: string) => {
      const found = log.filter(
        (event) => event.action === action && (target === undefined || event.target?.id === target),
      );
      expect(found, action).toHaveLength(1);
      return found[0]!;
    };
    const ownerActor = { type: 'person', id: owner.accountId, email: owner.email };
    expect(only('member.invite', first.id)).toMatchObject({
      actor: ownerActor,
      ip: '127.0.0.1',
      after: { email: joiner.email, role: 'viewer', mailed: false },
    });
    expect(only('member.invite_revoke')).toMatchObject({ actor: ownerActor, target: { id: withdrawn.id } });
    expect(only('member.join', joiner.accountId)).toMatchObject({
      actor: { type: 'person', id: joiner.accountId, email: joiner.email },
      after: { role: 'viewer' },
    });
    expect(only('member.role')).toMatchObject({
      actor: ownerActor,
      target: { type: 'member', id: joiner.accountId },
      before: { role: 'viewer' },
      after: { role: 'admin' },
    });
    expect(only('member.remove')).toMatchObject({ actor: ownerActor, before: { email: joiner.email, role: 'admin' } });
    expect(only('member.leave')).toMatchObject({
      actor: { type: 'person', id: leaver.accountId },
      before: { role: 'developer' },
    });
    expect(log).toHaveLength(9);
  });

  it('filters by action, actor and time, pages by cursor, and exports the same events as CSV and JSON', async () => {
    const { client, email } = await person('filters');
    for (const name of ['a', 'b', 'c', 'd', 'e']) expect((await client.post('/api/keys', { name })).status).toBe(201);
    await client.call('PUT', '/api/organisation/billing-details', { billingName: 'Filter Co', billingAddress: null });
    const all = await events(client);
    expect(all).toHaveLength(6);

    expect((await events(client, '&action=key')).map((event) => event.action)).toEqual(Array(5).fill('key.create'));
    expect((await events(client, '&action=organisation.billing_details')).map((event) => event.action)).toEqual([
      'organisation.billing_details',
    ]);
    expect(await events(client, `&actor=${encodeURIComponent(email.toUpperCase())}`)).toHaveLength(6);
    expect(await events(client, '&actor=operator')).toEqual([]);
    const today = new Date().toISOString().slice(0, 10);
    expect(await events(client, `&from=${today}&to=${today}`)).toHaveLength(6);
    expect(await events(client, '&to=2020-01-01')).toEqual([]);
    const newest = all[0]!.created_at;
    expect((await events(client, `&from=${encodeURIComponent(newest)}`)).map((event) => event.id)).toContain(
      all[0]!.id,
    );

    // Keyset pages of 2: every event once, in order.
    const paged: string[] = [];
    let cursor: string | null = null;
    do {
      const reply = await client.get(`/api/audit?limit=2${cursor === null ? '' : `&cursor=${cursor}`}`);
      paged.push(...reply.json.events.map((event: AuditEvent) => event.id));
      cursor = reply.json.nextCursor;
    } while (cursor !== null);
    expect(paged).toEqual(all.map((event) => event.id));

    const csv = await client.get('/api/audit/export?format=csv&action=key');
    expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(csv.headers.get('content-disposition')).toMatch(/^attachment; filename="tollgate-audit-.*\.csv"$/);
    const lines = csv.text.trim().split('\r\n');
    expect(lines[0]).toBe(
      'id,created_at,actor_type,actor_id,actor_email,actor_key_id,ip,action,target_type,target_id,before,after',
    );
    expect(lines.slice(1).map((line) => line.split(',')[0])).toEqual(all.slice(1).map((event) => event.id));
    const json = await client.get('/api/audit/export?format=json');
    expect(json.json).toEqual(all);

    // Bad filters: a 400 naming the parameter.
    for (const [query, field] of [
      ['action=key.explode', 'action'],
      ['from=yesterday', 'from'],
      ['from=2026-02-02&to=2026-01-01', 'from'],
      ['cursor=bm9wZQ', 'cursor'],
      ['limit=0', 'limit'],
    ]) {
      const reply = await client.get(`/api/audit?${query}`);
      expect(reply.status, query).toBe(400);
      expect(reply.json.error.field, query).toBe(field);
    }
  });

  it('shows another organisation nothing, in the dashboard and through /v1', async () => {
    const owner = await person('owner');
    await owner.client.post('/api/keys', { name: 'private' });
    const stranger = await person('stranger');
    expect(await events(stranger.client)).toEqual([]);
    expect(await events(stranger.client, `&actor=${encodeURIComponent(owner.email)}`)).toEqual([]);
    expect((await stranger.client.get('/api/audit/export?format=json')).json).toEqual([]);

    // A stranger's key reads the stranger's log only.
    const strangerKey = await stranger.client.post('/api/keys', { name: 'reader' });
    const reply = await fetch(`${harness.openaiBaseUrl}/audit?limit=200`, {
      headers: { authorization: `Bearer ${strangerKey.json.secret}` },
    });
    expect(reply.status).toBe(200);
    const body = (await reply.json()) as { object: string; data: AuditEvent[]; next_cursor: string | null };
    expect(body.object).toBe('list');
    expect(body.data.map((event) => event.action)).toEqual(['key.create']);
    expect(body.data[0]!.actor.id).toBe(stranger.accountId);
  });

  it('lets /v1 read the log only with the audit:read scope and a key an owner or admin created', async () => {
    const { client } = await person('api-reader');
    const full = (await client.post('/api/keys', { name: 'full' })).json.secret as string;
    const narrow = (await client.post('/api/keys', { name: 'narrow', scopes: ['models:use', 'usage:read'] })).json
      .secret as string;
    const call = (key: string, path = '/audit') =>
      fetch(`${harness.openaiBaseUrl}${path}`, { headers: { authorization: `Bearer ${key}` } });

    const listed = await call(full);
    expect(listed.status).toBe(200);
    expect(((await listed.json()) as { data: AuditEvent[] }).data.map((event) => event.action)).toEqual([
      'key.create',
      'key.create',
    ]);
    const exported = await call(full, '/audit/export?format=csv');
    expect(exported.headers.get('content-type')).toMatch(/^text\/csv/);
    expect((await exported.text()).trim().split('\r\n')).toHaveLength(3);

    const refused = await call(narrow);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('permission_denied');

    // A key no person created (the operator's) may not read it, whatever its scopes.
    const { accountId: otherId } = await harness.createAccountWithKey();
    const operatorKey = (await harness.gateway.keys.create(otherId, null, { name: 'operator' })).secret;
    const operatorMade = await call(operatorKey);
    expect(operatorMade.status).toBe(403);

    const bad = await call(full, '/audit?action=nope');
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { param: string } }).error.param).toBe('action');
  });

  it('prints a receipt with the billing details and the exact amount, for the organisation only', async () => {
    const { client, accountId } = await person('receipt');
    await client.call('PUT', '/api/organisation/billing-details', {
      billingName: 'Receipt & Sons <Ltd>',
      billingAddress: '42 Long Road\nFlat 3\nLeeds',
    });
    expect((await operator.post(`/api/admin/accounts/${accountId}/credit`, { amountUsd: '12.345678901' })).status).toBe(
      200,
    );
    const [entry] = await harness.gateway.storage.billing.ledger(accountId, 1);
    const receipt = await client.get(`/api/receipts/${entry!.id}`);
    expect(receipt.status).toBe(200);
    expect(receipt.headers.get('content-type')).toMatch(/^text\/html/);
    expect(receipt.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
    expect(receipt.text).toContain('Receipt &amp; Sons &lt;Ltd&gt;');
    expect(receipt.text).toContain('42 Long Road\nFlat 3\nLeeds');
    expect(receipt.text).toContain('<td class="amount">$12.345678901</td>');
    expect(receipt.text).toContain(entry!.id);
    expect(receipt.text).toMatch(/TG-\d{8}-[0-9A-F]{12}/);
    expect(receipt.text).toContain('Credit by the operator');

    // Another organisation's entry, an unknown id and a non-payment are 404 alike.
    const stranger = await person('receipt-stranger');
    for (const [who, id] of [
      [stranger.client, entry!.id],
      [client, 'le_000000000000000_000000000000'],
    ] as const) {
      const reply = await who.get(`/api/receipts/${id}`);
      expect(reply.status).toBe(404);
      expect(reply.json.error.code).toBe('not_found');
    }
  });

  it('refuses over-long or control-character billing details with 400 and changes nothing', async () => {
    const { client } = await person('details');
    const good = { billingName: 'Good Name', billingAddress: 'Line 1\nLine 2' };
    expect((await client.call('PUT', '/api/organisation/billing-details', good)).status).toBe(200);
    const before = await events(client);
    for (const [body, field] of [
      [{ ...good, billingName: 'x'.repeat(201) }, 'billingName'],
      [{ ...good, billingName: 'Bad\u0007Name' }, 'billingName'],
      [{ ...good, billingName: 'Two\nLines' }, 'billingName'],
      [{ ...good, billingAddress: 'y'.repeat(1001) }, 'billingAddress'],
      [{ ...good, billingAddress: 'Line\r\n2' }, 'billingAddress'],
      [{ ...good, billingAddress: 'Tab\there' }, 'billingAddress'],
      [{ ...good, extra: 1 }, undefined],
    ] as const) {
      const reply = await client.call('PUT', '/api/organisation/billing-details', body);
      expect(reply.status, JSON.stringify(body).slice(0, 60)).toBe(400);
      if (field !== undefined) expect(reply.json.error.field).toBe(field);
    }
    expect((await client.get('/api/organisation/billing-details')).json).toEqual(good);
    expect(await events(client)).toEqual(before);
  });
});
