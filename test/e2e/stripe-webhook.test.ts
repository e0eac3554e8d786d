import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DashboardClient, PASSWORD, uniqueEmail } from '../helpers/dashboard-client.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const WEBHOOK_SECRET = 'whsec_test_tollgate_webhook_secret';
// Never used on the network here: Checkout creation needs Stripe itself, webhooks need only the signing secret.
const SECRET_KEY = 'sk_test_tollgate_not_a_real_key';

let eventCounter = 0;

/** A `checkout.session.completed` event as Stripe sends it (the fields Tollgate reads, plus the envelope). */
function checkoutEvent(
  accountId: string | null,
  options: { amountTotal?: number; paymentStatus?: string; type?: string; sessionId?: string; currency?: string } = {},
) {
  const id = `evt_test_${++eventCounter}_${Date.now()}`;
  return {
    id,
    object: 'event',
    api_version: '2025-01-27.acacia',
    created: Math.floor(Date.now() / 1000),
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type: options.type ?? 'checkout.session.completed',
    data: {
      object: {
        id: options.sessionId ?? `cs_test_${eventCounter}_${Date.now()}`,
        object: 'checkout.session',
        mode: 'payment',
        amount_total: options.amountTotal ?? 2500,
        currency: options.currency ?? 'usd',
        client_reference_id: accountId,
        metadata: accountId === null ? {} : { tollgate_account_id: accountId },
        payment_status: options.paymentStatus ?? 'paid',
        status: 'complete',
      },
    },
  };
}

describe.each([{ database: 'sqlite' }, { database: 'postgres' }])('Stripe webhook on $database', ({ database }) => {
  let harness: TestGateway;

  beforeAll(async () => {
    harness = await startTestGateway({
      postgres: database === 'postgres',
      env: { STRIPE_SECRET_KEY: SECRET_KEY, STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET },
    });
  });

  afterAll(async () => {
    await harness?.close();
  });

  async function post(payload: string, signature: string | undefined, contentType = 'application/json; charset=utf-8') {
    const response = await fetch(`${harness.gateway.url}/api/stripe/webhook`, {
      method: 'POST',
      headers: { 'content-type': contentType, ...(signature === undefined ? {} : { 'stripe-signature': signature }) },
      body: payload,
    });
    return { status: response.status, json: (await response.json()) as any };
  }

  /** Signed with the `stripe` package's own test helper, as Stripe would sign it. */
  function sign(payload: string, secret = WEBHOOK_SECRET, timestamp?: number): string {
    return Stripe.webhooks.generateTestHeaderString({
      payload,
      secret,
      ...(timestamp === undefined ? {} : { timestamp }),
    });
  }

  async function account() {
    const { id } = await harness.gateway.accounts.create({ email: uniqueEmail('payer'), password: PASSWORD });
    return id;
  }

  async function balanceOf(accountId: string): Promise<bigint> {
    return (await harness.gateway.storage.billing.balance(accountId))!.balanceNano;
  }

  async function ledgerSize(accountId: string): Promise<number> {
    return (await harness.gateway.storage.billing.ledger(accountId, 100)).length;
  }

  it('a card top-up counts as a payment: $50 in total reaches pro (the default tiers) from the next request', async () => {
    const accountId = await account();
    const payload = JSON.stringify(checkoutEvent(accountId, { amountTotal: 5000 }));
    expect((await post(payload, sign(payload))).json.result).toBe('credited');
    expect((await harness.gateway.storage.accounts.findById(accountId))!.tier).toBe('pro');
  });

  it('credits a paid Checkout session exactly once; replays change nothing', async () => {
    const accountId = await account();
    const payload = JSON.stringify(checkoutEvent(accountId, { amountTotal: 2599 }));
    const first = await post(payload, sign(payload));
    expect(first).toEqual({ status: 200, json: { received: true, result: 'credited' } });
    expect(await balanceOf(accountId)).toBe(25_990_000_000n);
    const [entry] = await harness.gateway.storage.billing.ledger(accountId, 10);
    expect(entry).toMatchObject({ kind: 'topup', note: expect.stringMatching(/^Stripe Checkout cs_test_/) });
    expect(entry!.amountNano).toBe(25_990_000_000n);

    // Stripe retries and replays carry a fresh signature over the same event.
    const replay = await post(payload, sign(payload));
    expect(replay).toEqual({ status: 200, json: { received: true, result: 'duplicate' } });
    const concurrent = await Promise.all([post(payload, sign(payload)), post(payload, sign(payload))]);
    expect(concurrent.map((reply) => reply.json.result)).toEqual(['duplicate', 'duplicate']);
    expect(await balanceOf(accountId)).toBe(25_990_000_000n);
    expect(await ledgerSize(accountId)).toBe(1);
    expect(await harness.gateway.storage.billing.verifyLedger()).toEqual([]);
  });

  it('credits concurrent deliveries of one new event once', async () => {
    const accountId = await account();
    const payload = JSON.stringify(checkoutEvent(accountId, { amountTotal: 1000 }));
    const replies = await Promise.all(Array.from({ length: 4 }, () => post(payload, sign(payload))));
    expect(replies.filter((reply) => reply.json.result === 'credited')).toHaveLength(1);
    expect(replies.every((reply) => reply.status === 200)).toBe(true);
    expect(await balanceOf(accountId)).toBe(10_000_000_000n);
    expect(await ledgerSize(accountId)).toBe(1);
  });

  it('refuses forged, tampered, stale and unsigned events with 400 and changes nothing', async () => {
    const accountId = await account();
    const payload = JSON.stringify(checkoutEvent(accountId));
    const forged = await post(payload, sign(payload, 'whsec_someone_else'));
    expect(forged.status).toBe(400);
    expect(forged.json.error.code).toBe('invalid_signature');
    const tampered = payload.replace('"amount_total":2500', '"amount_total":250000');
    expect(tampered).not.toBe(payload);
    expect((await post(tampered, sign(payload))).status).toBe(400);
    const stale = await post(payload, sign(payload, WEBHOOK_SECRET, Math.floor(Date.now() / 1000) - 3600));
    expect(stale.status).toBe(400);
    expect((await post(payload, undefined)).status).toBe(400);
    expect((await post(payload, 'garbage')).status).toBe(400);
    expect(await balanceOf(accountId)).toBe(0n);
    expect(await ledgerSize(accountId)).toBe(0);

    // The same event, properly signed, is still credited afterwards: refusals left no trace.
    expect((await post(payload, sign(payload))).json.result).toBe('credited');
  });

  it('changes nothing for an unknown account, an unpaid session or another event type', async () => {
    const before = await harness.gateway.storage.billing.verifyLedger();
    const unknown = JSON.stringify(checkoutEvent('acct_does_not_exist'));
    expect(await post(unknown, sign(unknown))).toEqual({
      status: 200,
      json: { received: true, result: 'unknown_account' },
    });
    const missing = JSON.stringify(checkoutEvent(null));
    expect((await post(missing, sign(missing))).json.result).toBe('unknown_account');
    await harness.flushLogs();
    expect(harness.logs.some((line) => line.includes('unknown account'))).toBe(true);

    const accountId = await account();
    const unpaid = JSON.stringify(checkoutEvent(accountId, { paymentStatus: 'unpaid' }));
    expect((await post(unpaid, sign(unpaid))).json.result).toBe('ignored');
    const euros = JSON.stringify(checkoutEvent(accountId, { currency: 'eur' }));
    expect((await post(euros, sign(euros))).json.result).toBe('ignored');
    const other = JSON.stringify(checkoutEvent(accountId, { type: 'payment_intent.created' }));
    expect((await post(other, sign(other))).json.result).toBe('ignored');
    expect(await balanceOf(accountId)).toBe(0n);
    expect(await ledgerSize(accountId)).toBe(0);
    expect(await harness.gateway.storage.billing.verifyLedger()).toEqual(before);

    // The asynchronous payment, once it succeeds, is credited.
    const settled = JSON.stringify(
      checkoutEvent(accountId, { type: 'checkout.session.async_payment_succeeded', amountTotal: 500 }),
    );
    expect((await post(settled, sign(settled))).json.result).toBe('credited');
    expect(await balanceOf(accountId)).toBe(5_000_000_000n);
  });

  it('credits one Checkout session once even when two events report it', async () => {
    const accountId = await account();
    const sessionId = `cs_test_shared_${Date.now()}`;
    const completed = JSON.stringify(checkoutEvent(accountId, { sessionId, amountTotal: 700 }));
    const succeeded = JSON.stringify(
      checkoutEvent(accountId, { sessionId, amountTotal: 700, type: 'checkout.session.async_payment_succeeded' }),
    );
    expect((await post(completed, sign(completed))).json.result).toBe('credited');
    expect((await post(succeeded, sign(succeeded))).json.result).toBe('duplicate');
    expect(await balanceOf(accountId)).toBe(7_000_000_000n);
  });

  it('shows Stripe as enabled and validates Checkout amounts before calling Stripe', async () => {
    const dashboard = new DashboardClient(harness.gateway.url);
    await dashboard.register(uniqueEmail(), PASSWORD);
    expect((await dashboard.get('/api/billing')).json.stripe).toEqual({
      enabled: true,
      minimumUsd: '5',
      maximumUsd: '1000',
    });
    for (const amountUsd of ['4.99', '1000.01', '10.001', 'ten', '-10']) {
      const reply = await dashboard.post('/api/billing/checkout', { amountUsd });
      expect(reply.status).toBe(400);
      expect(reply.json.error).toMatchObject({ code: 'invalid_request', field: 'amountUsd' });
    }
    // The webhook is the one state-changing call without a CSRF token; checkout is not.
    expect((await dashboard.post('/api/billing/checkout', { amountUsd: '10' }, { csrf: false })).json.error.code).toBe(
      'csrf_failed',
    );
  });
});

describe('Stripe webhook without Stripe configured', () => {
  it('answers 400 stripe_not_configured and changes nothing', async () => {
    const harness = await startTestGateway();
    try {
      const { id: accountId } = await harness.gateway.accounts.create({ email: uniqueEmail(), password: PASSWORD });
      const payload = JSON.stringify(checkoutEvent(accountId));
      const response = await fetch(`${harness.gateway.url}/api/stripe/webhook`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'stripe-signature': Stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }),
        },
        body: payload,
      });
      expect(response.status).toBe(400);
      expect(((await response.json()) as any).error.code).toBe('stripe_not_configured');
      expect((await harness.gateway.storage.billing.balance(accountId))!.balanceNano).toBe(0n);
    } finally {
      await harness.close();
    }
  });
});
