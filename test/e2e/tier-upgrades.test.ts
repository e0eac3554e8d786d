import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import { createRedemptionCodes } from '../../src/billing/redemption-codes.js';
import { TierUpgrades } from '../../src/billing/tier-upgrades.js';
import { DashboardClient, PASSWORD, uniqueEmail } from '../helpers/dashboard-client.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

/**
 * Self-serve tier upgrades (docs/architecture.md#rate-limits-and-tiers) over real HTTP: bought from the balance with a
 * `tier` ledger entry (never overdrawing), reached automatically by total payments, renewed or lapsing at the end of
 * the period, the operator's tier a floor, and the new limit in force on the next request on another instance of the
 * same store.
 */
const DAY_MS = 86_400_000;
const TIERS_YAML = `
tiers:
  standard: { requestsPerMinute: 30 }
  pro: { requestsPerMinute: 60, tokensPerMinute: 500000, reachedAtTotalPaidUsd: 10, priceUsd: 4, periodDays: 30 }
  enterprise: { requestsPerMinute: 1000 }
`;

describe.each([{ database: 'sqlite' }, { database: 'postgres' }])('tier upgrades on $database', ({ database }) => {
  let first: TestGateway;
  let second: TestGateway | undefined;

  beforeAll(async () => {
    first = await startTestGateway({ postgres: database === 'postgres', yaml: TIERS_YAML });
    // Another instance on the same store: the limit it applies comes from the account row. Only PostgreSQL serves
    // several instances (an embedded SQLite file has one gateway, its holds in that process's memory).
    if (database === 'postgres')
      second = await startTestGateway({ yaml: TIERS_YAML, env: { DATABASE_URL: first.databaseUrl } });
  }, 120_000);

  afterAll(async () => {
    await second?.close();
    await first?.close();
  });

  /** The requests-per-minute limit a real chat request ran under. */
  async function requestLimit(baseUrl: string, key: string): Promise<string | null> {
    const response = await fetch(`${baseUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'beta-5.4', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(response.status).toBe(200);
    return response.headers.get('x-ratelimit-limit-requests');
  }

  async function redeem(dashboard: DashboardClient, usd: string): Promise<void> {
    const [code] = await createRedemptionCodes(first.gateway.storage.billing, parseUsd(usd), 1, Date.now());
    expect((await dashboard.post('/api/billing/redeem', { code })).status).toBe(200);
  }

  it('buys a tier from the balance, never overdrawing, and the next request anywhere runs at its limit', async () => {
    const email = uniqueEmail('tier');
    const dashboard = new DashboardClient(first.gateway.url);
    const registered = await dashboard.register(email, PASSWORD);
    expect(registered.status).toBe(201);
    const accountId: string = registered.json.account.id;
    const { secret: key } = await first.gateway.keys.create(accountId, accountId, { name: 'tiered' });
    expect(await requestLimit(first.gateway.url, key)).toBe('30');

    const before = await dashboard.get('/api/tiers');
    expect(before.status).toBe(200);
    expect(before.json.current).toEqual({ name: 'standard', requestsPerMinute: 30, tokensPerMinute: null });
    expect(
      before.json.tiers.map((tier: { name: string; position: string }) => `${tier.name}:${tier.position}`),
    ).toEqual(['standard:current', 'pro:above', 'enterprise:above']);
    expect(before.json.tiers[1]).toMatchObject({
      priceUsd: '4',
      periodDays: 30,
      reachedAtTotalPaidUsd: '10',
      tokensPerMinute: 500000,
    });
    expect(before.json.tiers[2]).toMatchObject({ priceUsd: null, reachedAtTotalPaidUsd: null });

    // No balance: refused, and nothing changes.
    const broke = await dashboard.post('/api/tiers/buy', { tier: 'pro' });
    expect(broke.status).toBe(409);
    expect(broke.json.error.message).toContain('costs $4');
    // Not for sale (operator only), or unknown.
    expect((await dashboard.post('/api/tiers/buy', { tier: 'enterprise' })).status).toBe(400);
    expect((await dashboard.post('/api/tiers/buy', { tier: 'platinum' })).status).toBe(400);
    expect((await first.gateway.storage.billing.ledger(accountId, 10)).length).toBe(0);

    await redeem(dashboard, '5');
    // $5 paid in total is below pro's $10: still standard.
    expect((await dashboard.get('/api/tiers')).json.current.name).toBe('standard');

    const bought = await dashboard.post('/api/tiers/buy', { tier: 'pro' });
    expect(bought.status).toBe(200);
    expect(bought.json.current.name).toBe('pro');
    expect(bought.json.source).toBe('bought');
    expect(bought.json.bought).toMatchObject({ tier: 'pro', renews: true });
    expect(bought.json.bought.until).toBeGreaterThan(Date.now() + 29 * DAY_MS);
    expect(bought.json.availableUsd).toBe('1');
    const [entry] = await first.gateway.storage.billing.ledger(accountId, 1);
    expect(entry).toMatchObject({
      kind: 'tier',
      amountNano: -parseUsd('4'),
      balanceAfterNano: parseUsd('1'),
      note: 'pro tier for 30 days',
    });
    const ledger = await dashboard.get('/api/billing/ledger');
    expect(ledger.json.entries[0]).toMatchObject({
      kind: 'tier',
      amountUsd: '-4',
      balanceAfterUsd: '1',
      description: 'Tier: pro tier for 30 days',
    });

    // The next request, on this instance and on another one, runs at pro's limit.
    expect(await requestLimit(first.gateway.url, key)).toBe('60');
    if (second !== undefined) expect(await requestLimit(second.gateway.url, key)).toBe('60');
    const account = (await (
      await fetch(`${first.gateway.url}/v1/account`, { headers: { authorization: `Bearer ${key}` } })
    ).json()) as { tiers_available: unknown[] };
    expect(account).toMatchObject({
      tier: 'pro',
      tier_source: 'bought',
      rate_limits: { requests_per_minute: 60, tokens_per_minute: 500000 },
      total_paid_usd: '5',
    });
    expect(account.tiers_available[1]).toMatchObject({
      name: 'pro',
      price_usd: '4',
      period_days: 30,
      reached_at_total_paid_usd: '10',
    });

    // Buying again (a double click) is refused: one charge.
    expect((await dashboard.post('/api/tiers/buy', { tier: 'pro' })).status).toBe(409);
    expect(
      (await first.gateway.storage.billing.ledger(accountId, 10)).filter((row) => row.kind === 'tier'),
    ).toHaveLength(1);

    // End of the period with $1 left (below $4): the tier lapses, nothing is charged, the balance stays.
    const later = new TierUpgrades(
      first.gateway.storage.tierUpgrades,
      first.gateway.config.tiers,
      () => Date.now() + 31 * DAY_MS,
    );
    expect(await later.settleEndedPeriods()).toBeGreaterThanOrEqual(1);
    expect(await requestLimit(first.gateway.url, key)).toBe('30');
    expect((await first.gateway.storage.billing.balance(accountId))!.balanceNano).toBe(parseUsd('1'));
    // Lapsed for want of balance: the dashboard offers it again, and the period is not swept twice.
    expect((await dashboard.get('/api/standing')).json.tierLapsed).toEqual({
      tier: 'pro',
      currentTier: 'standard',
      priceUsd: '4',
      affordable: false,
    });
    expect((await dashboard.get('/api/tiers')).json).toMatchObject({ lapsedTier: 'pro', bought: null });
    expect(await later.settleEndedPeriods()).toBe(0);
    expect(await first.gateway.storage.billing.verifyLedger()).toEqual([]);
  });

  it('renews a bought tier at the end of the period when the balance pays, once however many sweep', async () => {
    const dashboard = new DashboardClient(first.gateway.url);
    const accountId: string = (await dashboard.register(uniqueEmail('renew'), PASSWORD)).json.account.id;
    await redeem(dashboard, '9');
    expect((await dashboard.post('/api/tiers/buy', { tier: 'pro' })).status).toBe(200);
    const later = new TierUpgrades(
      first.gateway.storage.tierUpgrades,
      first.gateway.config.tiers,
      () => Date.now() + 31 * DAY_MS,
    );
    // Two sweepers at once (two instances): one renewal.
    await Promise.all([later.settleEndedPeriods(), later.settleEndedPeriods()]);
    const status = await later.status(accountId);
    expect(status.current.name).toBe('pro');
    expect(status.bought!.until).toBeGreaterThan(Date.now() + 59 * DAY_MS);
    const tierEntries = (await first.gateway.storage.billing.ledger(accountId, 10)).filter(
      (row) => row.kind === 'tier',
    );
    expect(tierEntries.map((row) => row.note)).toEqual(['pro tier for 30 days (renewal)', 'pro tier for 30 days']);
    expect((await first.gateway.storage.billing.balance(accountId))!.balanceNano).toBe(parseUsd('1'));

    // Cancelled renewal: at the next period end it lapses with no charge.
    expect((await dashboard.post('/api/tiers/renewal', { renews: false })).json.bought.renews).toBe(false);
    const muchLater = new TierUpgrades(
      first.gateway.storage.tierUpgrades,
      first.gateway.config.tiers,
      () => Date.now() + 61 * DAY_MS,
    );
    await muchLater.settleEndedPeriods();
    expect((await muchLater.status(accountId)).current.name).toBe('standard');
    // Turned off by the user: no lapsed tier to offer.
    expect((await muchLater.status(accountId)).lapsed).toBeNull();
    expect((await dashboard.get('/api/standing')).json.tierLapsed).toBeNull();
    expect(
      (await first.gateway.storage.billing.ledger(accountId, 10)).filter((row) => row.kind === 'tier'),
    ).toHaveLength(2);
    expect(await first.gateway.storage.billing.verifyLedger()).toEqual([]);
  });

  it('reaches a tier by total paid, and keeps the operator tier as a floor', async () => {
    const dashboard = new DashboardClient(first.gateway.url);
    const email = uniqueEmail('paid');
    const accountId: string = (await dashboard.register(email, PASSWORD)).json.account.id;
    const { secret: key } = await first.gateway.keys.create(accountId, accountId, { name: 'paid' });
    await redeem(dashboard, '6');
    expect((await dashboard.get('/api/tiers')).json.current.name).toBe('standard');
    await redeem(dashboard, '4');
    const reached = await dashboard.get('/api/tiers');
    expect(reached.json).toMatchObject({
      current: { name: 'pro' },
      source: 'paid_total',
      paidTotalUsd: '10',
      bought: null,
    });
    expect(await requestLimit(first.gateway.url, key)).toBe('60');
    // Nothing was charged for it.
    expect((await first.gateway.storage.billing.balance(accountId))!.balanceNano).toBe(parseUsd('10'));

    const operatorEmail = uniqueEmail('ops');
    await first.gateway.accounts.create({ email: operatorEmail, password: PASSWORD, role: 'admin' });
    const operator = new DashboardClient(first.gateway.url);
    await operator.login(operatorEmail, PASSWORD);
    const raised = await operator.post(`/api/admin/accounts/${accountId}/tier`, { tier: 'enterprise' });
    expect(raised.json.account.tier).toBe('enterprise');
    expect(await requestLimit(first.gateway.url, key)).toBe('1000');
    // Lowered by the operator: the tier the payments reached stays.
    const lowered = await operator.post(`/api/admin/accounts/${accountId}/tier`, { tier: 'standard' });
    expect(lowered.json.account.tier).toBe('pro');
    expect(await requestLimit(first.gateway.url, key)).toBe('60');
  });
});
