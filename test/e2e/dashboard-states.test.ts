import { execFile } from 'node:child_process';
import OpenAI from 'openai';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import { DESKTOP_VIEWPORT, launchChromium, PHONE_VIEWPORT, type BrowserSession } from '../helpers/chromium-browser.js';
import { DashboardClient } from '../helpers/dashboard-client.js';
import { logIn, openNav, screenshot } from '../helpers/dashboard-pages.js';
import { allAxeViolations, brokenWords, overflowProblems } from '../helpers/page-checks.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';
import { ensureWebBuild } from '../helpers/web-build.js';
import { formatUsd as exactUsd, fromNano } from '../../web/src/lib/money.js';

/**
 * The dashboard says what the API does before the user has to ask, in real Chromium against the built gateway:
 * the Models page with every price, a banner on every page while requests are refused for want of credit (gone
 * after a top-up), the one-time key dialog that asks before Escape or an outside click loses the key and whose
 * samples run as copied, a key past its spend limit that says so, and request statuses in words. Every state is
 * screenshotted and checked for clipped content and for axe-core violations of any impact, at 1280x800 and 390x844.
 */

const PASSWORD = 'correct horse battery staple';
const email = `states-${Date.now()}@example.com`;

let gateway: TestGateway;
let desktop: BrowserSession;
let page: Page;
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

function runInBash(script: string, env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(
      'bash',
      ['-e', '-c', script],
      { env: { PATH: process.env.PATH ?? '', ...env } },
      (error, stdout, stderr) => (error === null ? resolve(stdout) : reject(new Error(`${error.message}\n${stderr}`))),
    ),
  );
}

beforeAll(async () => {
  await ensureWebBuild();
  // No free tokens: a new account with no credit is refused from its first request.
  gateway = await startTestGateway({ env: { FREE_TOKENS_PER_DAY: '0' } });
  accountId = (await gateway.gateway.accounts.create({ email, password: PASSWORD })).id;
  desktop = await launchChromium(DESKTOP_VIEWPORT);
  page = await desktop.context.newPage();
}, 180_000);

afterAll(async () => {
  await desktop?.close();
  await gateway?.close();
});

describe('dashboard states in Chromium', { timeout: 120_000 }, () => {
  it('shows a banner on every page while requests are refused, with the action that fixes it', async () => {
    await logIn(page, gateway.gateway.url, email, PASSWORD);
    const banner = page.getByRole('alert').filter({ hasText: 'Your API requests are being refused' });
    await banner.waitFor();
    expect(await banner.textContent()).toContain('403 insufficient_balance');
    await inspect(page, 'states-overview-refused');
    // The banner tells the truth: the API refuses a request of this account.
    const probe = await gateway.gateway.keys.create(accountId, accountId, { name: 'probe' });
    const refused = await new OpenAI({
      apiKey: probe.secret,
      baseURL: gateway.openaiBaseUrl,
      maxRetries: 0,
    }).chat.completions
      .create({ model: 'delta-v4-flash', messages: [{ role: 'user', content: 'Hi' }] })
      .then(
        () => undefined,
        (error: InstanceType<typeof OpenAI.APIError>) => error.status,
      );
    expect(refused).toBe(403);

    await openNav(page, 'Models');
    await banner.waitFor();
    await banner.getByRole('link', { name: 'Add credit' }).click();
    await page.getByRole('heading', { level: 1, name: 'Billing' }).waitFor();

    await gateway.gateway.storage.billing.credit({
      accountId,
      kind: 'topup',
      amountNano: parseUsd('5'),
      idempotencyKey: `states-${accountId}`,
      note: null,
      at: Date.now(),
    });
    await openNav(page, 'Overview');
    await page.getByText('$5.00').first().waitFor();
    expect(await banner.count()).toBe(0);
  });

  it('lists every model with its exact prices and capabilities', async () => {
    await openNav(page, 'Models');
    const table = page.getByRole('table', { name: /Models, limits and prices/ });
    await table.waitFor();
    expect(await table.getByRole('row').count()).toBe(12); // header + 11 models
    const sonnet = await table.getByRole('row', { name: /alpha-sonnet-5/ }).textContent();
    for (const figure of ['200,000', '64,000', '$3.00', '$15.00', '$0.30', '$3.75 / $6.00', 'Structured output'])
      expect(sonnet).toContain(figure);
    const flash = await table.getByRole('row', { name: /delta-v4-flash/ }).textContent();
    expect(flash).toContain('$0.014');
    expect(flash).not.toContain('Images');
    await inspect(page, 'states-models');
  });

  it('asks before Escape or an outside click closes the one-time key dialog, and its samples run as copied', async () => {
    await openNav(page, 'API keys');
    await page.getByLabel('Name', { exact: true }).fill('states key');
    await page.getByRole('button', { name: 'Create key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Save your key' });
    await dialog.waitFor();
    secret = await dialog.getByLabel('Your new API key').inputValue();

    await page.keyboard.press('Escape');
    await dialog.getByText('You have not copied this key').waitFor();
    expect(await dialog.isVisible()).toBe(true);
    await inspect(page, 'states-key-dialog-asks');
    await dialog.getByRole('button', { name: 'Keep it open' }).click();
    expect(await dialog.getByText('You have not copied this key').count()).toBe(0);

    // A click on the backdrop, outside the dialog's box.
    await page.mouse.click(5, 5);
    await dialog.getByText('You have not copied this key').waitFor();
    await page.keyboard.press('Escape');
    expect(await dialog.isVisible()).toBe(true);

    // The samples carry the new key: the curl one runs in a shell that has no key of its own.
    await dialog.getByText('Try it: samples with this key filled in').click();
    await dialog.getByRole('tab', { name: 'curl' }).click();
    const sample = (await dialog.getByRole('tabpanel').textContent()) ?? '';
    expect(sample).toContain(secret);
    const reply = JSON.parse(await runInBash(sample, {})) as { object: string };
    expect(reply.object).toBe('chat.completion');

    await dialog.getByRole('button', { name: 'Close without copying' }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect(await page.content()).not.toContain(secret);
  });

  it("runs the Overview's samples as copied, with the key the user exported", async () => {
    await openNav(page, 'Overview');
    await page.getByRole('tab', { name: 'curl' }).click();
    const snippet = (await page.getByRole('tabpanel').textContent()) ?? '';
    expect(snippet).not.toContain('export TOLLGATE_API_KEY=');
    const reply = JSON.parse(await runInBash(snippet, { TOLLGATE_API_KEY: secret })) as { object: string };
    expect(reply.object).toBe('chat.completion');
  });

  it('shows request statuses in words, with their meaning one click away', async () => {
    const client = new OpenAI({ apiKey: secret, baseURL: gateway.openaiBaseUrl, maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: 'beta-5.4',
      stream: true,
      messages: [{ role: 'user', content: 'Tell me a story [[sim error after=2]]' }],
    });
    await expect(
      (async () => {
        for await (const _chunk of stream) {
          // drain until the vendor's error
        }
      })(),
    ).rejects.toThrow();
    await openNav(page, 'Usage');
    const requests = page.getByRole('table', { name: 'Recent requests' });
    await requests.getByText('Vendor error').waitFor();
    expect(await requests.textContent()).not.toMatch(/upstream_error|Upstream_error/);
    await requests.getByText('Completed').first().waitFor();
    await requests.getByText('Vendor error').click();
    await requests.getByText('The model’s vendor failed before the reply ended').waitFor();
    await inspect(page, 'states-usage-statuses');
  });

  it('says a key past its spend limit is refused until its period resets, not "Active"', async () => {
    const dashboard = new DashboardClient(gateway.gateway.url);
    expect((await dashboard.login(email, PASSWORD)).status).toBe(200);
    const listed = (await dashboard.get('/api/keys')).json.keys as Array<{ id: string; name: string }>;
    const key = listed.find((entry) => entry.name === 'states key')!;
    // Below what the key has already spent today: every request with it is refused from now on.
    const lowered = await dashboard.call('PATCH', `/api/keys/${key.id}`, {
      spendLimit: { usd: '0.000000001', period: 'day' },
    });
    expect(lowered.status).toBe(200);
    const refused = await new OpenAI({ apiKey: secret, baseURL: gateway.openaiBaseUrl, maxRetries: 0 }).chat.completions
      .create({ model: 'delta-v4-flash', messages: [{ role: 'user', content: 'Hi' }] })
      .then(
        () => undefined,
        (error: InstanceType<typeof OpenAI.APIError>) => error.code,
      );
    expect(refused).toBe('key_spend_limit_reached');

    await openNav(page, 'API keys');
    const row = page.getByRole('row', { name: /states key/ });
    await row.getByText(/Limit reached until/).waitFor();
    expect(await row.textContent()).not.toContain('Active');
    await inspect(page, 'states-keys-limit-reached');
  });

  it('shows money to the cent in summaries and exactly in the ledger', async () => {
    await openNav(page, 'Billing');
    const balance = page.getByTestId('balance');
    await balance.waitFor();
    const shown = (await balance.textContent()) ?? '';
    expect(shown).toMatch(/^\$\d+\.\d{2}$/);
    const exact = (await gateway.gateway.storage.billing.balance(accountId))!.balanceNano;
    // Rounded half away from zero to the cent; the exact figure on hover.
    const cents = (exact + 5_000_000n) / 10_000_000n;
    expect(shown).toBe(`$${cents / 100n}.${(cents % 100n).toString().padStart(2, '0')}`);
    expect(exact % 10_000_000n).not.toBe(0n);
    expect(await balance.getAttribute('title')).toBe(`Exactly ${exactUsd(fromNano(exact))}`);
    // The ledger keeps every digit: its last balance is the exact one.
    const ledger = page.getByRole('table', { name: /ledger/i });
    await ledger.waitFor();
    expect(await ledger.textContent()).toContain(exactUsd(fromNano(exact)));
    await inspect(page, 'states-billing');
    await openNav(page, 'Overview');
    await page.getByRole('region', { name: 'Balance', exact: true }).getByText(shown, { exact: true }).waitFor();
    await inspect(page, 'states-overview');
  });

  it('keeps the usage view in the URL, ignores hand-edited values, and times to the second', async () => {
    await openNav(page, 'Usage');
    await page.getByLabel('Model', { exact: true }).selectOption('beta-5.4');
    await page.getByRole('radio', { name: '7 days' }).click();
    await page.waitForURL(/model=beta-5\.4/);
    expect(new URL(page.url()).searchParams.get('range')).toBe('7');
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Usage' }).waitFor();
    const requests = page.getByRole('table', { name: 'Recent requests' });
    await requests.waitFor();
    expect(await page.getByLabel('Model', { exact: true }).inputValue()).toBe('beta-5.4');
    expect(await page.getByRole('radio', { name: '7 days' }).getAttribute('aria-checked')).toBe('true');
    expect(await requests.textContent()).not.toContain('alpha-sonnet-5');
    // Local time to the second, UTC on hover.
    const time = requests.locator('time').first();
    expect(await time.textContent()).toMatch(/\d{1,2}:\d{2}:\d{2} [AP]M UTC$/);
    expect(await time.getAttribute('title')).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$/);

    await page.goto(`${gateway.gateway.url}/usage?range=999&model=no-such-model&key=nope`);
    await page.getByText('could not be shown: showing the default instead').waitFor();
    expect(await page.getByRole('radio', { name: '30 days' }).getAttribute('aria-checked')).toBe('true');
    expect(await page.getByLabel('Model', { exact: true }).inputValue()).toBe('');
    await page.getByRole('table', { name: 'Recent requests' }).getByText('alpha-sonnet-5').first().waitFor();
    await inspect(page, 'states-usage-hand-edited-url');

    // The Overview's spend chart draws the one day with spend, nothing before it.
    await openNav(page, 'Overview');
    const bars = page.locator('.sparkline .recharts-bar-rectangle path');
    await bars.first().waitFor();
    expect(await bars.count()).toBe(1);
    expect(await page.locator('.sparkline .recharts-yAxis .recharts-cartesian-axis-tick').count()).toBeGreaterThan(1);
  });

  it('fits a phone screen', async () => {
    const phone = await launchChromium(PHONE_VIEWPORT);
    try {
      const mobile = await phone.context.newPage();
      await logIn(mobile, gateway.gateway.url, email, PASSWORD);
      for (const [label, name] of [
        ['Overview', 'phone-states-overview'],
        ['Models', 'phone-states-models'],
        ['Billing', 'phone-states-billing'],
        ['API keys', 'phone-states-keys'],
        ['Usage', 'phone-states-usage'],
      ] as const) {
        await openNav(mobile, label);
        await mobile.waitForLoadState('networkidle');
        await inspect(mobile, name);
      }
    } finally {
      await phone.close();
    }
  });

  it('left nothing clipped and no axe violation of any impact on any page', () => {
    expect(problems).toEqual([]);
  });
});
