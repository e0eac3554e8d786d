import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import { createRedemptionCodes } from '../../src/billing/redemption-codes.js';
import { DashboardClient, PASSWORD, uniqueEmail } from '../helpers/dashboard-client.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

/**
 * Spending a user can read: ledger rows for usage say the model, tokens and key and link to the request;
 * the usage page filters by key and by model; every figure adds up (running balance = previous balance + amount).
 */
describe('dashboard spending', () => {
  let harness: TestGateway;

  beforeAll(async () => {
    // No free allowance: every request is paid, so every request has a ledger row.
    harness = await startTestGateway({ env: { FREE_TOKENS_PER_DAY: '0' } });
  }, 60_000);

  afterAll(async () => {
    await harness?.close();
  });

  it('describes usage rows, filters usage by key and model, and the running balance adds up', async () => {
    const dashboard = new DashboardClient(harness.gateway.url);
    const accountId: string = (await dashboard.register(uniqueEmail('spend'), PASSWORD)).json.account.id;
    const [code] = await createRedemptionCodes(harness.gateway.storage.billing, parseUsd('5'), 1, Date.now());
    expect((await dashboard.post('/api/billing/redeem', { code })).status).toBe(200);
    const backend = (await dashboard.post('/api/keys', { name: 'backend' })).json;
    const notebook = (await dashboard.post('/api/keys', { name: 'notebook' })).json;
    const call = async (secret: string, model: string) => {
      const openai = new OpenAI({ apiKey: secret, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
      const { response } = await openai.chat.completions
        .create({ model, max_tokens: 64, messages: [{ role: 'user', content: 'Count to five.' }] })
        .withResponse();
      return response.headers.get('x-request-id')!;
    };
    const first = await call(backend.secret, 'beta-5.4');
    await call(backend.secret, 'alpha-sonnet-5');
    await call(notebook.secret, 'beta-5.4');

    const ledger = (await dashboard.get('/api/billing/ledger')).json.entries as Array<{
      kind: string;
      amountUsd: string;
      balanceAfterUsd: string;
      description: string;
      requestId: string | null;
      usage: Record<string, unknown> | null;
    }>;
    const usageRows = ledger.filter((entry) => entry.kind === 'usage');
    expect(usageRows).toHaveLength(3);
    const firstRow = usageRows.find((entry) => entry.requestId === first)!;
    expect(firstRow.usage).toMatchObject({ requestId: first, model: 'beta-5.4', keyName: 'backend' });
    expect(firstRow.usage!['inputTokens']).toBeGreaterThan(0);
    expect(firstRow.usage!['outputTokens']).toBeGreaterThan(0);
    expect(firstRow.description).toMatch(/^beta-5\.4 · [\d,]+ in \/ [\d,]+ out · key backend$/);
    // Newest first: each balance is the one below it plus this row's amount, exactly.
    const signed = (usd: string) => (usd.startsWith('-') ? -parseUsd(usd.slice(1)) : parseUsd(usd));
    for (let index = 0; index < ledger.length - 1; index += 1) {
      expect(signed(ledger[index + 1]!.balanceAfterUsd) + signed(ledger[index]!.amountUsd)).toBe(
        signed(ledger[index]!.balanceAfterUsd),
      );
    }
    expect(ledger[0]!.balanceAfterUsd).toBe((await dashboard.get('/api/billing')).json.balanceUsd);

    // The ledger's link: the request's own details.
    const details = await dashboard.get(`/api/usage/requests/${first}`);
    expect(details.json.request).toMatchObject({ requestId: first, model: 'beta-5.4', keyName: 'backend' });
    expect((await dashboard.get('/api/usage/requests/req_unknown')).status).toBe(404);
    // Another account's request is not found either.
    const stranger = new DashboardClient(harness.gateway.url);
    await stranger.register(uniqueEmail('stranger'), PASSWORD);
    expect((await stranger.get(`/api/usage/requests/${first}`)).status).toBe(404);

    // Filters: by key, by model, both; what can be chosen stays the whole range's.
    const all = (await dashboard.get('/api/usage/daily?days=7')).json;
    expect(all.filters.models).toEqual(['alpha-sonnet-5', 'beta-5.4']);
    expect(all.filters.keys.map((key: { keyName: string }) => key.keyName).sort()).toEqual(['backend', 'notebook']);
    const byKey = (await dashboard.get(`/api/usage/daily?days=7&keyId=${notebook.key.id}`)).json;
    expect(byKey.byKey).toHaveLength(1);
    expect(byKey.byModel.map((row: { model: string; requests: number }) => [row.model, row.requests])).toEqual([
      ['beta-5.4', 1],
    ]);
    expect(byKey.filters.models).toEqual(['alpha-sonnet-5', 'beta-5.4']);
    const byModel = (await dashboard.get('/api/usage/daily?days=7&model=beta-5.4')).json;
    expect(byModel.byModel.map((row: { requests: number }) => row.requests)).toEqual([2]);
    const requests = (await dashboard.get(`/api/usage/requests?keyId=${backend.key.id}&model=alpha-sonnet-5`)).json
      .requests;
    expect(requests.map((row: { model: string; keyName: string }) => `${row.model}/${row.keyName}`)).toEqual([
      'alpha-sonnet-5/backend',
    ]);
    expect(await harness.gateway.storage.billing.verifyLedger()).toEqual([]);
    expect(accountId).toMatch(/^acct_/);
  });

  it('speaks to users in sentences: over-long names refused (not cut), the lockout said once, a disabled account told so', async () => {
    const dashboard = new DashboardClient(harness.gateway.url);
    const email = uniqueEmail('words');
    const accountId: string = (await dashboard.register(email, PASSWORD)).json.account.id;
    const long = await dashboard.post('/api/keys', { name: 'k'.repeat(101) });
    expect(long.status).toBe(400);
    expect(long.json.error).toMatchObject({ message: 'Key names are at most 100 characters.', field: 'name' });
    expect((await dashboard.post('/api/keys', { name: '   ' })).json.error.message).toBe('Give the key a name.');
    expect((await dashboard.get('/api/keys')).json.keys).toEqual([]);
    expect((await dashboard.post('/api/keys', { name: 'k'.repeat(100) })).status).toBe(201);

    // Disabled: the right password is told the account is disabled; a wrong one learns nothing more.
    await harness.gateway.accounts.setDisabled(accountId, true);
    const disabled = await new DashboardClient(harness.gateway.url).login(email, PASSWORD);
    expect(disabled.status).toBe(403);
    expect(disabled.json.error).toMatchObject({
      code: 'account_disabled',
      message: expect.stringMatching(/^This account is disabled\./),
    });
    expect(
      (await new DashboardClient(harness.gateway.url).login(email, 'not the password at all')).json.error.code,
    ).toBe('invalid_credentials');

    // Five failures lock the email: the message says when, once, in minutes.
    const locked = uniqueEmail('locked');
    await new DashboardClient(harness.gateway.url).register(locked, PASSWORD);
    const guesser = new DashboardClient(harness.gateway.url);
    for (let attempt = 0; attempt < 5; attempt += 1)
      expect((await guesser.login(locked, `wrong password ${attempt}`)).status).toBe(401);
    const refused = await guesser.login(locked, 'wrong password again');
    expect(refused.status).toBe(429);
    expect(refused.json.error.message).toMatch(/^Too many failed logins\. Try again in \d+ minutes?\.$/);
  });
});
