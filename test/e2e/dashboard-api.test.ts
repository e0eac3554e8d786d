import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import { createRedemptionCodes } from '../../src/billing/redemption-codes.js';
import { DashboardClient, PASSWORD, uniqueEmail } from '../helpers/dashboard-client.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const DAY_MS = 86_400_000;
const today = () => new Date().toISOString().slice(0, 10);

describe.each([{ database: 'sqlite' }, { database: 'postgres' }])('dashboard API on $database', ({ database }) => {
  let harness: TestGateway;

  beforeAll(async () => {
    harness = await startTestGateway({ postgres: database === 'postgres' });
  });

  afterAll(async () => {
    await harness?.close();
  });

  const client = () => new DashboardClient(harness.gateway.url);

  async function registered(
    email = uniqueEmail(),
  ): Promise<{ client: DashboardClient; email: string; accountId: string }> {
    const dashboard = client();
    const reply = await dashboard.register(email, PASSWORD);
    expect(reply.status).toBe(201);
    return { client: dashboard, email, accountId: reply.json.account.id };
  }

  async function admin(): Promise<DashboardClient> {
    const email = uniqueEmail('ops');
    await harness.gateway.accounts.create({ email, password: PASSWORD, role: 'admin' });
    const dashboard = client();
    expect((await dashboard.login(email, PASSWORD)).status).toBe(200);
    return dashboard;
  }

  async function chat(secret: string, model = 'beta-5.4'): Promise<string> {
    const openai = new OpenAI({ apiKey: secret, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
    const { data, response } = await openai.chat.completions
      .create({ model, messages: [{ role: 'user', content: 'Say hi.' }], max_tokens: 32 })
      .withResponse();
    expect(data.choices[0]!.message.content).toBeTruthy();
    return response.headers.get('x-request-id')!;
  }

  describe('account and session', () => {
    it('registers, reports the session, logs out and logs back in', async () => {
      const dashboard = client();
      const first = await dashboard.open();
      expect(first.status).toBe(200);
      expect(first.json).toEqual({ account: null, csrfToken: expect.any(String) });

      const email = uniqueEmail('Mixed');
      const registered = await dashboard.register(email, PASSWORD);
      expect(registered.status).toBe(201);
      expect(registered.json.account).toEqual({
        id: expect.stringMatching(/^acct_/),
        email,
        role: 'user',
        tier: 'standard',
        createdAt: expect.any(Number),
      });
      expect(registered.json.csrfToken).not.toBe(first.json.csrfToken);

      const session = await dashboard.get('/api/session');
      expect(session.json.account).toEqual(registered.json.account);
      expect(session.json.csrfToken).toBe(registered.json.csrfToken);

      const out = await dashboard.post('/api/auth/logout');
      expect(out.status).toBe(200);
      expect(out.json.csrfToken).toEqual(expect.any(String));
      expect((await dashboard.get('/api/session')).json.account).toBeNull();
      expect((await dashboard.get('/api/overview')).json.error.code).toBe('not_authenticated');

      // Emails are case-insensitive.
      const login = await dashboard.login(email.toUpperCase(), PASSWORD);
      expect(login.status).toBe(200);
      expect(login.json.account.id).toBe(registered.json.account.id);
      expect((await dashboard.get('/api/overview')).status).toBe(200);
    });

    it('enforces the stated password rules and unique emails', async () => {
      const dashboard = client();
      const email = uniqueEmail();
      const short = await dashboard.register(email, 'too-short');
      expect(short.status).toBe(400);
      expect(short.json.error).toMatchObject({ code: 'invalid_request', field: 'password' });
      expect((await dashboard.register(email, 'x'.repeat(201))).json.error.field).toBe('password');
      const sameAsEmail = await dashboard.register(email, email.toUpperCase());
      expect(sameAsEmail.status).toBe(400);
      expect(sameAsEmail.json.error.message).toMatch(/email/);
      const badEmail = await dashboard.register('not-an-email', PASSWORD);
      expect(badEmail.json.error).toMatchObject({ code: 'invalid_request', field: 'email' });
      expect((await dashboard.register(email, 'x'.repeat(200))).status).toBe(201);

      const again = await client().register(email.toUpperCase(), PASSWORD);
      expect(again.status).toBe(409);
      expect(again.json.error).toMatchObject({ code: 'email_taken', field: 'email' });
    });

    it('refuses wrong credentials with 401 invalid_credentials', async () => {
      const { email } = await registered();
      const wrong = await client().login(email, 'wrong password here');
      expect(wrong.status).toBe(401);
      expect(wrong.json.error.code).toBe('invalid_credentials');
      const unknown = await client().login(uniqueEmail('nobody'), PASSWORD);
      expect(unknown.status).toBe(401);
      expect(unknown.json.error.code).toBe('invalid_credentials');
    });

    it('changes the password: other sessions end, this one continues under a new id', async () => {
      const { client: here, email } = await registered();
      const elsewhere = client();
      expect((await elsewhere.login(email, PASSWORD)).status).toBe(200);
      const cookieBefore = here.cookie;

      const wrongCurrent = await here.post('/api/auth/password', {
        currentPassword: 'not the password',
        newPassword: 'a brand new password',
      });
      expect(wrongCurrent.status).toBe(400);
      expect(wrongCurrent.json.error.field).toBe('currentPassword');
      const weak = await here.post('/api/auth/password', { currentPassword: PASSWORD, newPassword: 'short' });
      expect(weak.json.error.field).toBe('newPassword');
      expect((await elsewhere.get('/api/overview')).status).toBe(200); // nothing changed yet

      const changed = await here.post('/api/auth/password', {
        currentPassword: PASSWORD,
        newPassword: 'a brand new password',
      });
      expect(changed.status).toBe(200);
      expect(changed.json).toEqual({ csrfToken: expect.any(String) });
      expect(here.cookie).not.toBe(cookieBefore);
      expect((await here.get('/api/overview')).status).toBe(200);
      expect((await elsewhere.get('/api/overview')).status).toBe(401);
      expect((await client().login(email, PASSWORD)).status).toBe(401);
      expect((await client().login(email, 'a brand new password')).status).toBe(200);
    });
  });

  describe('API keys', () => {
    it('creates (secret shown once), lists, revokes at once and rotates', async () => {
      const { client: dashboard } = await registered();
      const created = await dashboard.post('/api/keys', { name: 'laptop', expiresInDays: 30 });
      expect(created.status).toBe(201);
      const { key, secret } = created.json;
      expect(secret).toMatch(/^sk-tg-/);
      expect(key).toEqual({
        id: expect.stringMatching(/^key_/),
        name: 'laptop',
        hint: expect.any(String),
        kind: 'standard',
        projectId: expect.stringMatching(/^proj_default_/),
        createdAt: expect.any(Number),
        lastUsedAt: null,
        expiresAt: expect.any(Number),
        revokedAt: null,
        status: 'active',
        scopes: ['models:use', 'usage:read', 'keys:manage', 'account:redeem', 'audit:read'],
        models: null,
        spendLimit: null,
        limits: [],
        rateLimit: null,
      });
      expect(Math.abs(key.expiresAt - key.createdAt - 30 * DAY_MS)).toBeLessThan(1000);
      expect(secret.endsWith(key.hint.slice(-4))).toBe(true);
      await chat(secret);

      const second = await dashboard.post('/api/keys', { name: 'server' });
      expect(second.json.key.expiresAt).toBeNull();
      const listed = await dashboard.get('/api/keys');
      expect(listed.json.keys.map((entry: { name: string }) => entry.name)).toEqual(['server', 'laptop']);
      expect(JSON.stringify(listed.json)).not.toContain(secret);

      const rotated = await dashboard.post(`/api/keys/${key.id}/rotate`);
      expect(rotated.status).toBe(201);
      expect(rotated.json).toMatchObject({
        key: { name: 'laptop', status: 'active', expiresAt: key.expiresAt },
        revokedKeyId: key.id,
      });
      await expect(chat(secret)).rejects.toMatchObject({ status: 401 });
      await chat(rotated.json.secret);

      const revoked = await dashboard.post(`/api/keys/${rotated.json.key.id}/revoke`);
      expect(revoked.status).toBe(200);
      expect(revoked.json.key).toMatchObject({
        id: rotated.json.key.id,
        status: 'revoked',
        revokedAt: expect.any(Number),
      });
      await expect(chat(rotated.json.secret)).rejects.toMatchObject({ status: 401 });
      expect((await dashboard.post(`/api/keys/${rotated.json.key.id}/revoke`)).status).toBe(404);
      expect((await dashboard.post(`/api/keys/${rotated.json.key.id}/rotate`)).status).toBe(404);
      expect((await dashboard.post('/api/keys', { name: '' })).json.error).toMatchObject({
        code: 'invalid_request',
        field: 'name',
      });
      expect((await dashboard.post('/api/keys', { name: 'x', expiresInDays: 0 })).status).toBe(400);
    });
  });

  describe('overview and usage', () => {
    it('shows balance, free allowance, tier, today, month and 30 days of spend', async () => {
      const { client: dashboard, accountId } = await registered();
      const {
        json: { secret },
      } = await dashboard.post('/api/keys', { name: 'k' });
      await chat(secret);
      await chat(secret, 'gamma-3.5-flash');
      await harness.gateway.storage.billing.credit({
        accountId,
        kind: 'topup',
        amountNano: parseUsd('7.5'),
        idempotencyKey: `t-${accountId}`,
        note: null,
        at: Date.now(),
      });
      const records = await harness.gateway.storage.usage.listByAccount(accountId, 10);
      expect(records).toHaveLength(2);
      const tokens = records.reduce(
        (sum, record) =>
          sum + record.inputTokens + record.outputTokens + record.cacheReadTokens + record.cacheWriteTokens,
        0,
      );
      const free = records.reduce((sum, record) => sum + record.freeTokens, 0);

      const overview = await dashboard.get('/api/overview');
      expect(overview.status).toBe(200);
      const body = overview.json;
      expect(body.balanceUsd).toBe('7.5');
      expect(body.reservedUsd).toBe('0');
      expect(body.freeAllowance).toEqual({
        limitTokens: 1_000_000,
        usedTokens: free,
        leftTokens: 1_000_000 - free,
        resetsAt: (Math.floor(Date.now() / DAY_MS) + 1) * DAY_MS,
      });
      expect(body.tier).toEqual({ name: 'standard', requestsPerMinute: 100, tokensPerMinute: null });
      expect(body.tiers.map((tier: { name: string }) => tier.name)).toEqual(
        expect.arrayContaining(['standard', 'pro', 'enterprise']),
      );
      expect(body.today).toEqual({ requests: 2, tokens, costUsd: '0' }); // inside the free allowance
      expect(body.month).toEqual(body.today);
      expect(body.spend30d).toHaveLength(30);
      expect(body.spend30d[29]).toEqual({ day: today(), costUsd: '0' });
      expect(body.spend30d[0].day).toBe(new Date(Date.now() - 29 * DAY_MS).toISOString().slice(0, 10));
      expect(body.baseUrl).toBe(harness.gateway.url);
    });

    it('charts usage per day and model, per key, pages recent requests and exports CSV', async () => {
      const { client: dashboard, accountId } = await registered();
      const first = (await dashboard.post('/api/keys', { name: 'first, "quoted"' })).json;
      const second = (await dashboard.post('/api/keys', { name: '=cmd()' })).json;
      const ids = [await chat(first.secret), await chat(first.secret, 'gamma-3.5-flash'), await chat(second.secret)];

      const daily = await dashboard.get('/api/usage/daily?days=7');
      expect(daily.status).toBe(200);
      expect(daily.json.days).toHaveLength(7);
      const last = daily.json.days[6];
      expect(last.day).toBe(today());
      expect(Object.keys(last.models).sort()).toEqual(['beta-5.4', 'gamma-3.5-flash']);
      expect(last.models['beta-5.4'].requests).toBe(2);
      expect(daily.json.days.slice(0, 6).every((day: { models: object }) => Object.keys(day.models).length === 0)).toBe(
        true,
      );
      const records = await harness.gateway.storage.usage.listByAccount(accountId, 10);
      const beta = records.filter((record) => record.model === 'beta-5.4');
      expect(daily.json.byModel.find((row: { model: string }) => row.model === 'beta-5.4')).toEqual({
        model: 'beta-5.4',
        requests: 2,
        inputTokens: beta.reduce((sum, record) => sum + record.inputTokens, 0),
        outputTokens: beta.reduce((sum, record) => sum + record.outputTokens, 0),
        cacheReadTokens: beta.reduce((sum, record) => sum + record.cacheReadTokens, 0),
        cacheWriteTokens: beta.reduce((sum, record) => sum + record.cacheWriteTokens, 0),
        cacheWrite1hTokens: beta.reduce((sum, record) => sum + record.cacheWrite1hTokens, 0),
        costUsd: '0',
        unbilledTokens: 0,
        unbilledUsd: '0',
      });
      const byKey = Object.fromEntries(daily.json.byKey.map((row: { keyId: string }) => [row.keyId, row]));
      expect(byKey[first.key.id]).toMatchObject({ keyName: 'first, "quoted"', hint: first.key.hint, requests: 2 });
      expect(byKey[second.key.id]).toMatchObject({ keyName: '=cmd()', requests: 1 });
      expect((await dashboard.get('/api/usage/daily?days=90')).json.days).toHaveLength(90);
      expect((await dashboard.get('/api/usage/daily')).json.days).toHaveLength(30);
      expect((await dashboard.get('/api/usage/daily?days=8')).json.error).toMatchObject({
        code: 'invalid_request',
        field: 'days',
      });

      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: any = await dashboard.get(
          `/api/usage/requests?limit=2${cursor === null ? '' : `&cursor=${cursor}`}`,
        );
        expect(page.status).toBe(200);
        expect(page.json.requests.length).toBeLessThanOrEqual(2);
        seen.push(...page.json.requests.map((row: { requestId: string }) => row.requestId));
        cursor = page.json.nextCursor;
      } while (cursor !== null);
      expect(seen).toEqual([...ids].reverse());
      const one = (await dashboard.get('/api/usage/requests?limit=1')).json.requests[0];
      expect(one).toMatchObject({
        requestId: ids[2],
        model: 'beta-5.4',
        keyId: second.key.id,
        keyName: '=cmd()',
        status: 'ok',
        stream: false,
        costUsd: '0',
      });
      expect(one).toEqual(
        expect.objectContaining({
          createdAt: expect.any(Number),
          latencyMs: expect.any(Number),
          reasoningTokens: expect.any(Number),
        }),
      );
      expect((await dashboard.get('/api/usage/requests?limit=201')).status).toBe(400);
      expect((await dashboard.get('/api/usage/requests?cursor=garbage!')).json.error.field).toBe('cursor');

      const csv = await dashboard.get('/api/usage/export.csv?days=7');
      expect(csv.status).toBe(200);
      expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
      expect(csv.headers.get('content-disposition')).toMatch(/^attachment; filename="tollgate-usage-.*\.csv"$/);
      const lines = csv.text.trimEnd().split('\r\n');
      expect(lines[0]).toBe(
        'request_id,created_at,model,key_id,key_name,input_tokens,output_tokens,cache_read_tokens,cache_write_tokens,reasoning_tokens,cost_usd,latency_ms,status,stream,cache_write_1h_tokens',
      );
      expect(lines).toHaveLength(4);
      expect(lines[1]).toContain(`${ids[2]},`);
      expect(lines[1]).toContain(",'=cmd(),"); // a formula is defused
      expect(lines[3]).toContain(',"first, ""quoted""",');
    });

    it('keeps each account to its own data', async () => {
      const owner = await registered();
      const {
        json: { secret },
      } = await owner.client.post('/api/keys', { name: 'mine' });
      await chat(secret);
      const other = await registered();
      expect((await other.client.get('/api/usage/requests')).json.requests).toEqual([]);
      expect((await other.client.get('/api/keys')).json.keys).toEqual([]);
      expect((await other.client.get('/api/overview')).json.today.requests).toBe(0);
    });
  });

  describe('billing', () => {
    it('shows balance and allowance, redeems a code once, lists the ledger with running balance', async () => {
      const { client: dashboard, accountId } = await registered();
      const billing = await dashboard.get('/api/billing');
      expect(billing.json).toMatchObject({
        balanceUsd: '0',
        reservedUsd: '0',
        freeAllowance: { limitTokens: 1_000_000, usedTokens: 0, leftTokens: 1_000_000 },
        stripe: { enabled: false, minimumUsd: '5', maximumUsd: '1000' },
      });
      // A user is told what they can do, in words; the operator's CLI commands are for operators only.
      expect(billing.json.operatorHint).toBeNull();
      expect(billing.json.creditHint).toMatch(/operator/);
      expect(billing.text).not.toMatch(/tollgate |STRIPE_/);

      const [code] = await createRedemptionCodes(harness.gateway.storage.billing, parseUsd('2.5'), 1, Date.now());
      const redeemed = await dashboard.post('/api/billing/redeem', { code: code!.toLowerCase() });
      expect(redeemed.status).toBe(200);
      expect(redeemed.json).toEqual({ creditedUsd: '2.5', balanceUsd: '2.5' });
      const reused = await dashboard.post('/api/billing/redeem', { code });
      expect(reused.status).toBe(400);
      expect(reused.json.error).toMatchObject({ code: 'invalid_code', field: 'code' });
      expect((await dashboard.post('/api/billing/redeem', { code: 'TG-0000-0000-0000-0000' })).json.error.code).toBe(
        'invalid_code',
      );
      expect((await dashboard.post('/api/billing/redeem', { code: 'nonsense' })).json.error.code).toBe('invalid_code');
      const [expired] = await createRedemptionCodes(
        harness.gateway.storage.billing,
        parseUsd('1'),
        1,
        Date.now() - 2 * DAY_MS,
        Date.now() - DAY_MS,
      );
      expect((await dashboard.post('/api/billing/redeem', { code: expired })).json.error.code).toBe('invalid_code');

      for (const [index, usd] of ['1.25', '0.000000001'].entries()) {
        await harness.gateway.storage.billing.credit({
          accountId,
          kind: 'topup',
          amountNano: parseUsd(usd),
          idempotencyKey: `t-${accountId}-${index}`,
          note: 'wire transfer',
          at: Date.now() + index + 1,
        });
      }
      const page1 = await dashboard.get('/api/billing/ledger?limit=2');
      expect(page1.json.entries).toEqual([
        {
          id: expect.any(String),
          kind: 'topup',
          amountUsd: '0.000000001',
          balanceAfterUsd: '3.750000001',
          createdAt: expect.any(Number),
          description: 'Top-up: wire transfer',
          requestId: null,
          unbilledTokens: 0,
          unbilledUsd: '0',
          webSearchRequests: 0,
          webFetchRequests: 0,
          serverToolUsd: '0',
          usage: null,
        },
        {
          id: expect.any(String),
          kind: 'topup',
          amountUsd: '1.25',
          balanceAfterUsd: '3.75',
          createdAt: expect.any(Number),
          description: 'Top-up: wire transfer',
          requestId: null,
          unbilledTokens: 0,
          unbilledUsd: '0',
          webSearchRequests: 0,
          webFetchRequests: 0,
          serverToolUsd: '0',
          usage: null,
        },
      ]);
      const page2 = await dashboard.get(`/api/billing/ledger?limit=2&cursor=${page1.json.nextCursor}`);
      expect(page2.json.entries).toEqual([
        expect.objectContaining({ kind: 'redemption', amountUsd: '2.5', balanceAfterUsd: '2.5' }),
      ]);
      expect(page2.json.nextCursor).toBeNull();
      expect((await dashboard.get('/api/billing')).json.balanceUsd).toBe('3.750000001');
    });

    it('answers checkout with stripe_not_configured when Stripe is not set up', async () => {
      const { client: dashboard } = await registered();
      const checkout = await dashboard.post('/api/billing/checkout', { amountUsd: '10.00' });
      expect(checkout.status).toBe(400);
      expect(checkout.json.error.code).toBe('stripe_not_configured');
      expect(checkout.json.error.message).toMatch(/operator/);
    });
  });

  describe('operator view', () => {
    it('is for admins only', async () => {
      const { client: user, accountId } = await registered();
      for (const [method, path] of [
        ['GET', '/api/admin/accounts'],
        ['POST', `/api/admin/accounts/${accountId}/credit`],
        ['POST', '/api/admin/codes'],
        ['GET', '/api/admin/upstreams'],
      ] as const) {
        const reply = await user.call(method, path, method === 'POST' ? { amountUsd: '5', count: 1 } : undefined);
        expect(reply.status).toBe(403);
        expect(reply.json.error.code).toBe('forbidden');
        expect((await client().call(method, path)).status).toBe(method === 'GET' ? 401 : 403); // anonymous: no session (and no CSRF token)
      }
      expect((await harness.gateway.storage.billing.balance(accountId))!.balanceNano).toBe(0n);
    });

    it('lists and searches accounts with balance and 30-day usage, pages them', async () => {
      const operator = await admin();
      const tag = `find${Date.now()}`;
      const users = [];
      for (const name of ['a', 'b', 'c']) users.push(await registered(`${tag}-${name}@example.com`));
      const {
        json: { secret },
      } = await users[1]!.client.post('/api/keys', { name: 'k' });
      await chat(secret);
      await harness.gateway.storage.billing.credit({
        accountId: users[1]!.accountId,
        kind: 'topup',
        amountNano: parseUsd('3'),
        idempotencyKey: `t-${users[1]!.accountId}`,
        note: null,
        at: Date.now(),
      });

      const page1 = await operator.get(`/api/admin/accounts?query=${tag.toUpperCase()}&limit=2`);
      expect(page1.status).toBe(200);
      expect(page1.json.accounts.map((account: { email: string }) => account.email)).toEqual([
        `${tag}-a@example.com`,
        `${tag}-b@example.com`,
      ]);
      expect(page1.json.accounts[1]).toEqual({
        id: users[1]!.accountId,
        email: `${tag}-b@example.com`,
        role: 'user',
        tier: 'standard',
        disabled: false,
        balanceUsd: '3',
        requests30d: 1,
        costUsd30d: '0',
        createdAt: expect.any(Number),
      });
      const page2 = await operator.get(`/api/admin/accounts?query=${tag}&limit=2&cursor=${page1.json.nextCursor}`);
      expect(page2.json.accounts.map((account: { email: string }) => account.email)).toEqual([`${tag}-c@example.com`]);
      expect(page2.json.nextCursor).toBeNull();
      // LIKE wildcards in the query are literal.
      expect((await operator.get(`/api/admin/accounts?query=${tag}_%25`)).json.accounts).toEqual([]);
    });

    it('credits, changes the tier, mints codes and disables an account (keys 401 at once, sessions end)', async () => {
      const operator = await admin();
      const user = await registered();
      const {
        json: { secret },
      } = await user.client.post('/api/keys', { name: 'k' });

      const credited = await operator.post(`/api/admin/accounts/${user.accountId}/credit`, {
        amountUsd: '12.345',
        note: 'invoice 42',
      });
      expect(credited.json).toEqual({ balanceUsd: '12.345' });
      expect((await user.client.get('/api/billing/ledger')).json.entries[0]).toMatchObject({
        kind: 'topup',
        amountUsd: '12.345',
        description: expect.stringContaining('invoice 42'),
      });
      expect(
        (await operator.post(`/api/admin/accounts/${user.accountId}/credit`, { amountUsd: '-1' })).json.error.field,
      ).toBe('amountUsd');
      expect((await operator.post(`/api/admin/accounts/${user.accountId}/credit`, { amountUsd: '0' })).status).toBe(
        400,
      );
      expect((await operator.post('/api/admin/accounts/acct_nope/credit', { amountUsd: '1' })).status).toBe(404);

      const tier = await operator.post(`/api/admin/accounts/${user.accountId}/tier`, { tier: 'pro' });
      expect(tier.json.account).toMatchObject({ id: user.accountId, tier: 'pro', disabled: false });
      expect((await user.client.get('/api/overview')).json.tier).toEqual({
        name: 'pro',
        requestsPerMinute: 1000,
        tokensPerMinute: null,
      });
      expect(
        (await operator.post(`/api/admin/accounts/${user.accountId}/tier`, { tier: 'platinum' })).json.error,
      ).toMatchObject({ code: 'invalid_request', field: 'tier' });

      const codes = await operator.post('/api/admin/codes', { amountUsd: '4', count: 3, expiresInDays: 7 });
      expect(codes.status).toBe(201);
      expect(codes.json.codes).toHaveLength(3);
      expect(new Set(codes.json.codes).size).toBe(3);
      expect((await user.client.post('/api/billing/redeem', { code: codes.json.codes[0] })).json).toEqual({
        creditedUsd: '4',
        balanceUsd: '16.345',
      });
      expect((await operator.post('/api/admin/codes', { amountUsd: '4', count: 0 })).status).toBe(400);

      await chat(secret);
      const disabled = await operator.post(`/api/admin/accounts/${user.accountId}/disabled`, { disabled: true });
      expect(disabled.json.account).toMatchObject({ id: user.accountId, disabled: true });
      await expect(chat(secret)).rejects.toMatchObject({ status: 401 });
      expect((await user.client.get('/api/overview')).status).toBe(401);
      // With the right password, the user is told the account is disabled, not that the password is wrong.
      expect((await client().login(user.email, PASSWORD)).json.error.code).toBe('account_disabled');

      const enabled = await operator.post(`/api/admin/accounts/${user.accountId}/disabled`, { disabled: false });
      expect(enabled.json.account.disabled).toBe(false);
      await chat(secret);
      expect((await client().login(user.email, PASSWORD)).status).toBe(200);
    });

    it('does not let an operator disable their own account; lists upstream credentials', async () => {
      const operator = await admin();
      const self = (await operator.get('/api/session')).json.account;
      expect((await operator.post(`/api/admin/accounts/${self.id}/disabled`, { disabled: true })).status).toBe(400);
      const upstreams = await operator.get('/api/admin/upstreams');
      expect(upstreams.status).toBe(200);
      const vendors = upstreams.json.credentials.map((credential: { vendor: string }) => credential.vendor);
      expect(new Set(vendors)).toEqual(new Set(['openai', 'anthropic', 'gemini', 'deepseek']));
      for (const credential of upstreams.json.credentials) {
        expect(credential).toEqual({
          vendor: expect.any(String),
          label: expect.any(String),
          baseUrl: expect.stringMatching(/^http:\/\/127\.0\.0\.1:/),
          state: 'healthy',
          coolingDownUntil: null,
          recentFailures: 0,
          deployment: null,
          weight: 1,
          attempts: expect.any(Number),
          failures: 0,
          lastError: null,
          meanLatencyMs: expect.toBeOneOf([null, expect.any(Number)]),
        });
      }
      expect(JSON.stringify(upstreams.json)).not.toMatch(/apiKey|sk-/);
    });
  });

  it('answers unknown /api routes with a JSON 404 in the dashboard shape', async () => {
    const reply = await client().get('/api/nope');
    expect(reply.status).toBe(404);
    expect(reply.json.error.code).toBe('not_found');
    expect(reply.headers.get('cache-control')).toBe('no-store');
  });
});
