import OpenAI from 'openai';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import { TierUpgrades } from '../../src/billing/tier-upgrades.js';
import { DESKTOP_VIEWPORT, launchChromium, PHONE_VIEWPORT, type BrowserSession } from '../helpers/chromium-browser.js';
import { DashboardClient, PASSWORD, uniqueEmail } from '../helpers/dashboard-client.js';
import { logIn, openNav, screenshot } from '../helpers/dashboard-pages.js';
import { allAxeViolations, brokenWords, overflowProblems } from '../helpers/page-checks.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';
import { ensureWebBuild } from '../helpers/web-build.js';

/**
 * Usage views one can link to, and banners one cannot miss, in real Chromium against the built gateway: custom
 * from/to dates beside the presets and the page of requests survive a reload; hand-edited parameters fall back to the
 * default with a note, never a blank page; the usage API checks a custom range. A bought tier that lapsed for want of
 * balance, a disabled account and a key whose limit cannot pay one more request each say so, with the action that
 * fixes it. Every state is screenshotted and checked for clipped content and axe violations of any impact.
 */

const DAY_MS = 86_400_000;
const dayText = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10);
const today = Math.floor(Date.now() / DAY_MS);

let gateway: TestGateway;
let desktop: BrowserSession;
let page: Page;
const email = uniqueEmail('links');
let accountId = '';
let secret = '';
const problems: string[] = [];

async function inspect(target: Page, name: string): Promise<void> {
  await screenshot(target, name);
  for (const problem of await overflowProblems(target)) problems.push(`${name}: overflow: ${problem}`);
  for (const word of await brokenWords(target)) problems.push(`${name}: word broken mid-way: ${word}`);
  for (const violation of await allAxeViolations(target))
    problems.push(
      `${name}: axe ${violation.impact} ${violation.id} (${violation.help}): ${violation.targets.join(' | ')}`,
    );
}

async function credit(account: string, usd: string): Promise<void> {
  await gateway.gateway.storage.billing.credit({
    accountId: account,
    kind: 'topup',
    amountNano: parseUsd(usd),
    idempotencyKey: `links-${account}-${usd}-${Math.random()}`,
    note: null,
    at: Date.now(),
  });
}

beforeAll(async () => {
  await ensureWebBuild();
  // No free tokens: a key's money limit decides every request.
  gateway = await startTestGateway({ env: { FREE_TOKENS_PER_DAY: '0' } });
  accountId = (await gateway.gateway.accounts.create({ email, password: PASSWORD })).id;
  await credit(accountId, '5');
  secret = (await gateway.gateway.keys.create(accountId, accountId, { name: 'traffic' })).secret;
  // Two pages of recent requests (25 a page).
  const client = new OpenAI({ apiKey: secret, baseURL: gateway.openaiBaseUrl, maxRetries: 0 });
  for (let index = 0; index < 30; index++)
    await client.chat.completions.create({
      model: 'delta-v4-flash',
      max_tokens: 8,
      messages: [{ role: 'user', content: `Request ${index}` }],
    });
  desktop = await launchChromium(DESKTOP_VIEWPORT);
  page = await desktop.context.newPage();
}, 180_000);

afterAll(async () => {
  await desktop?.close();
  await gateway?.close();
});

describe('links and banners in Chromium', { timeout: 120_000 }, () => {
  it('keeps custom dates and the page of requests in the URL across a reload', async () => {
    await logIn(page, gateway.gateway.url, email, PASSWORD);
    await openNav(page, 'Usage');
    await page.getByRole('radio', { name: 'Dates' }).click();
    const from = dayText(today - 6);
    await page.getByLabel('From').fill(from);
    await page.getByLabel('To', { exact: true }).fill(dayText(today));
    await page.getByRole('button', { name: 'Show' }).click();
    await page.waitForURL(/from=/);
    await page.getByText(`Spend, ${from} to ${dayText(today)}`).waitFor();
    await page.getByRole('navigation', { name: 'Recent requests pages' }).getByRole('button', { name: 'Next' }).click();
    await page.waitForURL(/page=2/);
    const search = new URL(page.url()).searchParams;
    expect([search.get('from'), search.get('to'), search.get('page')]).toEqual([from, dayText(today), '2']);

    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Usage' }).waitFor();
    await page.getByText('Page 2').waitFor();
    expect(await page.getByRole('radio', { name: 'Dates' }).getAttribute('aria-checked')).toBe('true');
    expect(await page.getByLabel('From').inputValue()).toBe(from);
    await page.getByText(`Spend, ${from} to ${dayText(today)}`).waitFor();
    // The second page: the 5 oldest requests.
    const rows = page.getByRole('table', { name: 'Recent requests' }).locator('tbody tr');
    await rows.first().waitFor();
    expect(await rows.count()).toBe(5);
    await inspect(page, 'links-usage-dates-page-2');

    // A preset drops the dates; the page number stays out of the URL on page 1.
    await page.getByRole('radio', { name: '7 days' }).click();
    await page.waitForURL((url) => !url.searchParams.has('from'));
    expect(new URL(page.url()).searchParams.get('range')).toBe('7');
  });

  it('ignores hand-edited parameters it cannot show and shows the default, never a blank page', async () => {
    for (const search of [
      `from=${dayText(today)}&to=${dayText(today - 3)}&page=abc`,
      `from=2026-02-30&to=${dayText(today)}`,
      `from=${dayText(today)}&to=${dayText(today + 2)}`,
      `from=${dayText(today - 400)}&to=${dayText(today)}`,
      'range=5&page=-2',
      `from=${dayText(today)}`,
    ]) {
      await page.goto(`${gateway.gateway.url}/usage?${search}`);
      await page.getByText('could not be shown: showing the default instead').waitFor();
      expect(await page.getByRole('radio', { name: '30 days' }).getAttribute('aria-checked'), search).toBe('true');
      await page.getByText('Spend, last 30 days').waitFor();
      await page.getByRole('table', { name: 'Recent requests' }).waitFor();
      expect(await page.getByText('Page 1').count(), search).toBe(1);
    }
    await inspect(page, 'links-usage-hand-edited');
  });

  it('answers a custom range in the usage API and refuses one it cannot show, naming the field', async () => {
    const client = new DashboardClient(gateway.gateway.url);
    await client.login(email, PASSWORD);
    const week = await client.get(`/api/usage/daily?from=${dayText(today - 6)}&to=${dayText(today)}`);
    expect(week.status).toBe(200);
    expect(week.json.days).toHaveLength(7);
    expect(week.json.byModel[0]).toMatchObject({ model: 'delta-v4-flash', requests: 30 });
    const past = await client.get(`/api/usage/daily?from=${dayText(today - 20)}&to=${dayText(today - 10)}`);
    expect(past.json.days).toHaveLength(11);
    expect(past.json.byModel).toEqual([]);
    for (const [query, field] of [
      [`from=${dayText(today)}&to=${dayText(today - 1)}`, 'from'],
      [`from=${dayText(today)}&to=${dayText(today + 1)}`, 'to'],
      [`from=${dayText(today - 366)}&to=${dayText(today)}`, 'from'],
      [`from=2026-02-30&to=${dayText(today)}`, 'from'],
      [`from=${dayText(today)}`, 'to'],
      [`days=7&from=${dayText(today)}&to=${dayText(today)}`, 'days'],
    ] as const) {
      const refused = await client.get(`/api/usage/daily?${query}`);
      expect(refused.status, query).toBe(400);
      expect(refused.json.error.field, query).toBe(field);
    }
    const csv = await client.get(`/api/usage/export.csv?from=${dayText(today)}&to=${dayText(today)}`);
    expect(csv.headers.get('content-disposition')).toContain(`${dayText(today)}_${dayText(today)}.csv`);
    expect(csv.text.trim().split('\n')).toHaveLength(31);
    const yesterday = await client.get(`/api/usage/export.csv?from=${dayText(today - 1)}&to=${dayText(today - 1)}`);
    expect(yesterday.text.trim().split('\n')).toHaveLength(1);
  });

  it('says "Limit reached until" once what is left of a key limit cannot pay one request', async () => {
    const client = new DashboardClient(gateway.gateway.url);
    await client.login(email, PASSWORD);
    // Nothing spent, but 10 nano-USD cannot hold even a one-token prompt on the cheapest model.
    const tight = await client.post('/api/keys', { name: 'tight', spendLimit: { usd: '0.00000001', period: 'day' } });
    expect(tight.json.key.spendLimit).toMatchObject({ spentUsd: '0', limitReached: true });
    const roomy = await client.post('/api/keys', { name: 'roomy', spendLimit: { usd: '1', period: 'day' } });
    expect(roomy.json.key.spendLimit.limitReached).toBe(false);
    // The words tell the truth: the API refuses the tight key.
    const refused = await new OpenAI({
      apiKey: tight.json.secret,
      baseURL: gateway.openaiBaseUrl,
      maxRetries: 0,
    }).chat.completions
      .create({ model: 'delta-v4-flash', messages: [{ role: 'user', content: 'Hi' }] })
      .then(
        () => undefined,
        (error: InstanceType<typeof OpenAI.APIError>) => error.code,
      );
    expect(refused).toBe('key_spend_limit_reached');

    await openNav(page, 'API keys');
    await page
      .getByRole('row', { name: /tight/ })
      .getByText(/^Limit reached until/)
      .waitFor();
    expect(await page.getByRole('row', { name: /roomy/ }).textContent()).toContain('Active');
    await inspect(page, 'links-keys-limit-reached');
  });

  it('shows a lapsed tier with the action that fixes it: add credit, then renew', async () => {
    const lapsedEmail = uniqueEmail('lapsed');
    const lapsedId = (await gateway.gateway.accounts.create({ email: lapsedEmail, password: PASSWORD })).id;
    await credit(lapsedId, '25');
    const client = new DashboardClient(gateway.gateway.url);
    await client.login(lapsedEmail, PASSWORD);
    expect((await client.post('/api/tiers/buy', { tier: 'pro' })).json.current.name).toBe('pro');
    // The period ends with $5 left, below pro's $20: it lapses.
    const later = new TierUpgrades(
      gateway.gateway.storage.tierUpgrades,
      gateway.gateway.config.tiers,
      () => Date.now() + 31 * DAY_MS,
    );
    expect(await later.settleEndedPeriods()).toBeGreaterThanOrEqual(1);
    expect((await client.get('/api/standing')).json.tierLapsed).toEqual({
      tier: 'pro',
      currentTier: 'standard',
      priceUsd: '20',
      affordable: false,
    });
    expect((await client.get('/api/tiers')).json.lapsedTier).toBe('pro');

    const other = await desktop.context.browser()!.newContext({ viewport: DESKTOP_VIEWPORT });
    try {
      const lapsed = await other.newPage();
      await logIn(lapsed, gateway.gateway.url, lapsedEmail, PASSWORD);
      const banner = lapsed.getByRole('alert').filter({ hasText: 'Your pro tier has lapsed' });
      await banner.waitFor();
      expect(await banner.textContent()).toContain("now run at the standard tier's limits");
      await inspect(lapsed, 'links-tier-lapsed-add-credit');
      await banner.getByRole('link', { name: 'Add credit to renew' }).click();
      await lapsed.getByRole('heading', { level: 1, name: 'Billing' }).waitFor();

      await credit(lapsedId, '20');
      await openNav(lapsed, 'Overview');
      const renew = banner.getByRole('button', { name: 'Renew pro for $20.00' });
      await renew.waitFor();
      await inspect(lapsed, 'links-tier-lapsed-renew');
      await renew.click();
      await banner.waitFor({ state: 'detached' });
      await lapsed.getByText('pro tier').first().waitFor();
      expect((await client.get('/api/tiers')).json).toMatchObject({ current: { name: 'pro' }, lapsedTier: null });
    } finally {
      await other.close();
    }
  });

  it('leaves no banner for a renewal the user cancelled, and lets a lapsed tier go', async () => {
    const cancelEmail = uniqueEmail('cancelled');
    const cancelId = (await gateway.gateway.accounts.create({ email: cancelEmail, password: PASSWORD })).id;
    await credit(cancelId, '25');
    const client = new DashboardClient(gateway.gateway.url);
    await client.login(cancelEmail, PASSWORD);
    await client.post('/api/tiers/buy', { tier: 'pro' });
    await client.post('/api/tiers/renewal', { renews: false });
    const later = new TierUpgrades(
      gateway.gateway.storage.tierUpgrades,
      gateway.gateway.config.tiers,
      () => Date.now() + 31 * DAY_MS,
    );
    await later.settleEndedPeriods();
    expect((await client.get('/api/tiers')).json.current.name).toBe('standard');
    expect((await client.get('/api/standing')).json.tierLapsed).toBeNull();

    // Lapsed for want of balance, then let go: the banner's "Stay on standard".
    const letGoEmail = uniqueEmail('let-go');
    const letGoId = (await gateway.gateway.accounts.create({ email: letGoEmail, password: PASSWORD })).id;
    await credit(letGoId, '25');
    const letGo = new DashboardClient(gateway.gateway.url);
    await letGo.login(letGoEmail, PASSWORD);
    await letGo.post('/api/tiers/buy', { tier: 'pro' });
    await later.settleEndedPeriods();
    expect((await letGo.get('/api/standing')).json.tierLapsed.tier).toBe('pro');
    expect((await letGo.post('/api/tiers/renewal', { renews: false })).status).toBe(200);
    expect((await letGo.get('/api/standing')).json.tierLapsed).toBeNull();
    expect(await gateway.gateway.storage.billing.verifyLedger()).toEqual([]);
  });

  it('tells the owner of a disabled account so at log-in, with the request for the operator ready to copy', async () => {
    const disabledEmail = uniqueEmail('disabled');
    const disabledId = (await gateway.gateway.accounts.create({ email: disabledEmail, password: PASSWORD })).id;
    await gateway.gateway.accounts.setDisabled(disabledId, true);
    const other = await desktop.context.browser()!.newContext({ viewport: DESKTOP_VIEWPORT });
    try {
      const target = await other.newPage();
      await target.goto(`${gateway.gateway.url}/login`);
      await target.getByLabel('Email').fill(disabledEmail);
      await target.getByLabel('Password', { exact: true }).fill(PASSWORD);
      await target.getByRole('button', { name: 'Log in' }).click();
      const banner = target.getByRole('alert').filter({ hasText: 'This account is disabled.' });
      await banner.waitFor();
      expect(await banner.textContent()).toContain('until the operator of this gateway enables it again');
      await banner.getByRole('button', { name: 'Copy a request for the operator' }).click();
      await banner.getByRole('button', { name: 'Copied' }).waitFor();
      await inspect(target, 'links-account-disabled');
    } finally {
      await other.close();
    }
  });

  it('fits a phone screen', async () => {
    const phone = await launchChromium(PHONE_VIEWPORT);
    try {
      const mobile = await phone.context.newPage();
      await logIn(mobile, gateway.gateway.url, email, PASSWORD);
      await mobile.goto(`${gateway.gateway.url}/usage?from=${dayText(today - 6)}&to=${dayText(today)}&page=2`);
      await mobile.getByText('Page 2').waitFor();
      await inspect(mobile, 'phone-links-usage-dates');
      await openNav(mobile, 'API keys');
      await mobile
        .getByText(/^Limit reached until/)
        .first()
        .waitFor();
      await inspect(mobile, 'phone-links-keys');
    } finally {
      await phone.close();
    }
  });

  it('left nothing clipped and no axe violation of any impact', () => {
    expect(problems).toEqual([]);
  });
});
