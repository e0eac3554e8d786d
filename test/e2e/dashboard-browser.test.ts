import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import { createRedemptionCodes } from '../../src/billing/redemption-codes.js';
import { DESKTOP_VIEWPORT, launchChromium, PHONE_VIEWPORT, type BrowserSession } from '../helpers/chromium-browser.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';
import { ensureWebBuild } from '../helpers/web-build.js';

/**
 * The dashboard in real Chromium against a real gateway (simulator upstream): register → create a key → use it
 * with the official OpenAI SDK → see the request in the usage table and chart → revoke → 401 → redeem a code →
 * the balance rises; then the operator view, and every page on a phone-width screen. Screenshots land in
 * test/artifacts/screenshots/ for a person to look at.
 */

const SCREENSHOTS = fileURLToPath(new URL('../artifacts/screenshots/', import.meta.url));
const PASSWORD = 'correct horse battery staple';
const NEW_PASSWORD = 'a different long passphrase';

let gateway: TestGateway;
let desktop: BrowserSession;
let page: Page;
const email = `dash-${Date.now()}@example.com`;
let secret = '';
let password = PASSWORD;
let rotatedSecret = '';
/** The user's balance as the billing page showed it after paid usage ("$4.98"). */
let userBalance = '';

async function screenshot(target: Page, name: string): Promise<void> {
  // Let charts (ResizeObserver-driven) lay out before the picture.
  await target.waitForTimeout(150);
  await target.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

async function openNav(target: Page, label: string): Promise<void> {
  const menu = target.getByRole('button', { name: 'Menu' });
  if (await menu.isVisible()) await menu.click();
  await target.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: label, exact: true }).click();
  await target.getByRole('heading', { level: 1, name: label === 'API keys' ? 'API keys' : label }).waitFor();
}

/** The elements sticking out past the right edge of the screen, to say what overflows when something does. */
function widestElements(target: Page): Promise<string> {
  return target.evaluate<string>(`[...document.querySelectorAll('body *')]
    .filter((element) => element.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
    .filter((element) => {
      for (let parent = element.parentElement; parent !== null && parent !== document.body; parent = parent.parentElement) {
        if (getComputedStyle(parent).overflowX !== 'visible') return false;
      }
      return true;
    })
    .slice(0, 5)
    .map((element) => element.tagName.toLowerCase() + '.' + element.className + ' ' + Math.round(element.getBoundingClientRect().right))
    .join(', ')`);
}

function sdk(apiKey: string): OpenAI {
  return new OpenAI({ apiKey, baseURL: gateway.openaiBaseUrl, maxRetries: 0 });
}

async function logIn(target: Page, who: string, secretWord: string): Promise<void> {
  await target.goto(`${gateway.gateway.url}/login`);
  await target.getByLabel('Email').fill(who);
  await target.getByLabel('Password', { exact: true }).fill(secretWord);
  await target.getByRole('button', { name: 'Log in' }).click();
  await target.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
}

beforeAll(async () => {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await ensureWebBuild();
  // A small free allowance, so the test also spends paid credit once it has some.
  gateway = await startTestGateway({ env: { FREE_TOKENS_PER_DAY: '1000' } });
  desktop = await launchChromium(DESKTOP_VIEWPORT);
  page = await desktop.context.newPage();
}, 180_000);

afterAll(async () => {
  await desktop?.close();
  await gateway?.close();
});

describe('dashboard in Chromium', () => {
  it('serves the SPA at / and for client-side routes, but JSON 404s under /v1 and /api', async () => {
    const root = await fetch(`${gateway.gateway.url}/`);
    expect(root.status).toBe(200);
    expect(root.headers.get('content-type')).toContain('text/html');
    expect(root.headers.get('content-security-policy')).toContain("default-src 'self'");
    const html = await root.text();
    expect(html).toContain('<div id="root">');
    // No third-party origin anywhere in the page: everything ships in the build.
    expect(html).not.toMatch(/https?:\/\/(?!www\.w3\.org)/);

    const deepLink = await fetch(`${gateway.gateway.url}/usage`);
    expect(deepLink.status).toBe(200);
    expect(await deepLink.text()).toBe(html);

    for (const path of ['/v1/nope', '/api/nope', '/healthz/nope', '/assets/missing-file.js']) {
      const response = await fetch(`${gateway.gateway.url}${path}`);
      expect(response.status, path).toBe(404);
      expect(response.headers.get('content-type'), path).toContain('application/json');
    }
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const asset = await fetch(`${gateway.gateway.url}${script}`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('cache-control')).toContain('immutable');
  });

  it('registers with the password rules stated on the form, and lands on the overview', async () => {
    await page.goto(`${gateway.gateway.url}/`);
    await page.getByRole('heading', { name: 'Log in' }).waitFor();
    await screenshot(page, 'desktop-login');
    await page.getByRole('link', { name: 'Create an account' }).click();
    await page.getByRole('heading', { name: 'Create your account' }).waitFor();
    expect(await page.getByText('10 to 200 characters, and not your email address.').isVisible()).toBe(true);

    // A too-short password is refused by the server, with the message next to the field.
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password', { exact: true }).fill('short');
    await page.getByLabel('Password', { exact: true }).evaluate((input) => input.removeAttribute('minlength'));
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByText(/at least 10 characters/).waitFor();
    await screenshot(page, 'desktop-register-error');

    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/');
    await page.getByText(`Signed in as ${email}`).waitFor();
  });

  it('creates a key shown once in a dialog, and the key works with the OpenAI SDK', async () => {
    await openNav(page, 'API keys');
    await page.getByText('Keep keys out of version control').waitFor();
    await page.getByLabel('Name', { exact: true }).fill('e2e backend');
    await page.getByLabel('Expires').selectOption({ label: '90 days' });
    await page.getByRole('button', { name: 'Create key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Save your key' });
    await dialog.waitFor();
    await dialog.getByText('This key will not be shown again').waitFor();
    expect(await dialog.getByRole('button', { name: 'Copy' }).isVisible()).toBe(true);
    secret = await dialog.getByLabel('Your new API key').inputValue();
    expect(secret).toMatch(/^sk-tg-/);
    await screenshot(page, 'desktop-keys-created-dialog');
    await dialog.getByRole('button', { name: 'Done' }).click();
    await dialog.waitFor({ state: 'hidden' });

    const row = page.getByRole('row', { name: /e2e backend/ });
    await row.waitFor();
    expect(await row.textContent()).toContain(secret.slice(-4));
    expect(await row.textContent()).toContain('active');
    // The list shows only the hint: the full key is nowhere on the page any more.
    expect(await page.content()).not.toContain(secret);

    const client = sdk(secret);
    const first = await client.chat.completions.create({ model: 'alpha-sonnet-5', messages: [{ role: 'user', content: 'Hello from the dashboard test' }] });
    expect(first.choices[0]?.message.content).toBeTruthy();
    await client.chat.completions.create({ model: 'gamma-2.5-pro', messages: [{ role: 'user', content: 'A second model for the stacked chart' }] });
    const stream = await client.chat.completions.create({ model: 'beta-5.4', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Streamed' }] });
    for await (const _chunk of stream) {
      // drain
    }
    await page.reload();
    await page.getByRole('row', { name: /e2e backend/ }).waitFor();
    await screenshot(page, 'desktop-keys');
  });

  it('shows the requests in the usage table, the charts and the breakdowns', async () => {
    await openNav(page, 'Usage');
    const requests = page.getByRole('table', { name: 'Recent requests' });
    await requests.waitFor();
    for (const model of ['alpha-sonnet-5', 'gamma-2.5-pro', 'beta-5.4']) {
      await requests.getByRole('row', { name: new RegExp(model.replaceAll('.', '\\.')) }).first().waitFor();
    }
    expect(await requests.getByRole('row').count()).toBe(4); // header + 3 requests
    expect(await requests.textContent()).toContain('e2e backend');

    // The charts render bars from the real records: one stacked segment per model on today's bar.
    const tokenChart = page.getByRole('figure', { name: 'Tokens per day by model' });
    await tokenChart.locator('.recharts-bar-rectangle path').first().waitFor();
    expect(await tokenChart.locator('.recharts-bar-rectangle path').count()).toBe(3);
    const legend = await tokenChart.locator('.recharts-legend-wrapper').textContent();
    for (const model of ['alpha-sonnet-5', 'gamma-2.5-pro', 'beta-5.4']) expect(legend).toContain(model);
    expect(await page.getByRole('figure', { name: 'Cost per day by model' }).locator('.recharts-surface').count()).toBeGreaterThan(0);

    const byModel = page.getByRole('table', { name: 'Usage by model' });
    expect(await byModel.getByRole('row').count()).toBe(4);
    const byKey = page.getByRole('table', { name: 'Usage by key' });
    // Requests column of the key's row: all three requests were made with it.
    expect(await byKey.getByRole('row', { name: /e2e backend/ }).getByRole('cell').first().textContent()).toBe('3');

    await page.getByRole('radio', { name: '7 days' }).click();
    await tokenChart.locator('.recharts-bar-rectangle path').first().waitFor();
    expect(await page.getByRole('link', { name: 'Export CSV' }).getAttribute('href')).toBe('/api/usage/export.csv?days=7');
    const download = page.waitForEvent('download');
    await page.getByRole('link', { name: 'Export CSV' }).click();
    const file = await download;
    expect(file.suggestedFilename()).toMatch(/\.csv$/);
    await screenshot(page, 'desktop-usage');
  });

  it('revokes the key after confirmation, and the SDK then gets 401', async () => {
    await openNav(page, 'API keys');
    await page.getByRole('button', { name: 'Revoke e2e backend' }).click();
    const confirm = page.getByRole('dialog', { name: 'Revoke this key?' });
    await confirm.waitFor();
    await screenshot(page, 'desktop-keys-revoke-confirm');
    await confirm.getByRole('button', { name: 'Revoke key' }).click();
    await confirm.waitFor({ state: 'hidden' });
    await page.getByRole('row', { name: /e2e backend/ }).getByText('revoked').waitFor();

    const error = await sdk(secret)
      .chat.completions.create({ model: 'alpha-sonnet-5', messages: [{ role: 'user', content: 'after revocation' }] })
      .then(() => null, (reason: unknown) => reason);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(401);
  });

  it('rotates a key: a new secret in the dialog, the old key stops working', async () => {
    await page.getByLabel('Name', { exact: true }).fill('rotating');
    await page.getByRole('button', { name: 'Create key' }).click();
    const created = page.getByRole('dialog', { name: 'Save your key' });
    const oldSecret = await created.getByLabel('Your new API key').inputValue();
    await created.getByRole('button', { name: 'Done' }).click();
    await page.getByRole('button', { name: 'Rotate rotating' }).click();
    await page.getByRole('dialog', { name: 'Rotate this key?' }).getByRole('button', { name: 'Rotate key' }).click();
    const rotated = page.getByRole('dialog', { name: 'Key rotated: save your new key' });
    const newSecret = await rotated.getByLabel('Your new API key').inputValue();
    expect(newSecret).toMatch(/^sk-tg-/);
    expect(newSecret).not.toBe(oldSecret);
    rotatedSecret = newSecret;
    await rotated.getByRole('button', { name: 'Done' }).click();
    const models = await sdk(newSecret).models.list();
    expect(models.data.length).toBeGreaterThan(0);
    await expect(sdk(oldSecret).models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it('redeems a code the operator minted, and the balance rises', async () => {
    await openNav(page, 'Billing');
    const balance = page.getByTestId('balance');
    expect(await balance.textContent()).toBe('$0.00');
    await page.getByText('Card payments are not enabled').waitFor();

    const [code] = await createRedemptionCodes(gateway.gateway.storage.billing, parseUsd('5'), 1, Date.now());
    await page.getByLabel('Redemption code').fill(code!.toLowerCase());
    await page.getByRole('button', { name: 'Redeem' }).click();
    await page.getByText('$5.00 added').waitFor();
    await page.getByTestId('balance').getByText('$5.00').waitFor();
    const ledger = page.getByRole('table', { name: 'Ledger' });
    await ledger.getByRole('row', { name: /Code/ }).waitFor();
    expect(await ledger.getByRole('row', { name: /Code/ }).textContent()).toContain('+$5.00');

    // The same code again is refused and changes nothing.
    await page.getByLabel('Redemption code').fill(code!);
    await page.getByRole('button', { name: 'Redeem' }).click();
    await page.getByRole('alert').waitFor();
    expect(await page.getByTestId('balance').textContent()).toBe('$5.00');
  });

  it('charges usage beyond the free allowance to the balance: ledger, cost chart and overview show it', async () => {
    const client = sdk(rotatedSecret);
    for (const model of ['alpha-sonnet-5', 'beta-5.4']) {
      await client.chat.completions.create({ model, max_tokens: 2000, messages: [{ role: 'user', content: 'Spend some credit [[sim words=600]]' }] });
    }
    await page.reload();
    const ledger = page.getByRole('table', { name: 'Ledger' });
    await ledger.getByRole('row', { name: /Usage/ }).first().waitFor();
    expect(await ledger.getByRole('row', { name: /Usage/ }).first().textContent()).toMatch(/-\$0\.\d+/);
    const balance = (await page.getByTestId('balance').textContent()) ?? '';
    userBalance = balance;
    expect(parseUsd(balance.replace('$', ''))).toBeLessThan(parseUsd('5'));
    await screenshot(page, 'desktop-billing');

    await openNav(page, 'Usage');
    const costChart = page.getByRole('figure', { name: 'Cost per day by model' });
    await costChart.locator('.recharts-bar-rectangle path').first().waitFor();
    expect(await costChart.locator('.recharts-bar-rectangle path').count()).toBeGreaterThanOrEqual(1);
    await screenshot(page, 'desktop-usage-paid');
  });

  it('shows the overview with balance, allowance, tiers and quick-start snippets filled with the base URL', async () => {
    await openNav(page, 'Overview');
    const balance = page.getByRole('region', { name: 'Balance', exact: true });
    await balance.getByText(userBalance, { exact: true }).waitFor();
    await page.getByRole('region', { name: 'Free tokens left today', exact: true }).waitFor();
    expect(await page.getByRole('region', { name: 'Today', exact: true }).textContent()).toContain('5 requests');
    await page.getByRole('tab', { name: 'Python' }).click();
    expect(await page.getByRole('tabpanel').textContent()).toContain(`base_url="${gateway.gateway.url}/v1"`);
    await page.getByRole('tab', { name: 'TypeScript' }).click();
    expect(await page.getByRole('tabpanel').textContent()).toContain('import OpenAI from "openai"');
    await page.getByRole('tab', { name: 'curl' }).click();
    const tiers = page.getByRole('table', { name: 'Rate-limit tiers' });
    expect(await tiers.getByRole('row', { name: /standard/ }).textContent()).toContain('current');
    await page.getByText('How to upgrade').waitFor();
    await screenshot(page, 'desktop-overview');
    // The sparkline draws today's spend from the real records.
    await page.locator('.sparkline .recharts-area').waitFor();
    // The dark variant (prefers-color-scheme) of the same page, for a person to look at.
    await page.emulateMedia({ colorScheme: 'dark' });
    await screenshot(page, 'desktop-overview-dark');
    await page.emulateMedia({ colorScheme: 'light' });
  });

  it('changes the password, logs out and logs in with the new one', async () => {
    await openNav(page, 'Settings');
    await page.getByLabel('Current password').fill(PASSWORD);
    await page.getByLabel('New password', { exact: true }).fill(NEW_PASSWORD);
    await page.getByLabel('Confirm new password').fill(NEW_PASSWORD);
    await page.getByRole('button', { name: 'Change password' }).click();
    await page.getByText('Password changed').waitFor();
    password = NEW_PASSWORD;
    await screenshot(page, 'desktop-settings');
    // The change ended the old session and carried this browser into a new one: still logged in.
    await openNav(page, 'Overview');
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('heading', { name: 'Log in' }).waitFor();

    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('alert').waitFor();
    await logIn(page, email, password);
  });

  it('gives operators the accounts list, credit, codes, tiers and upstream status', async () => {
    const adminEmail = `operator-${Date.now()}@example.com`;
    await gateway.gateway.accounts.create({ email: adminEmail, password: PASSWORD, role: 'admin' });
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('heading', { name: 'Log in' }).waitFor();
    await logIn(page, adminEmail, PASSWORD);
    await openNav(page, 'Operator');

    const accounts = page.getByRole('table', { name: 'Accounts' });
    const userRow = accounts.getByRole('row', { name: new RegExp(email.replaceAll('.', '\\.')) });
    await userRow.waitFor();
    expect(await userRow.textContent()).toContain(userBalance);

    await userRow.getByRole('button', { name: `Credit ${email}` }).click();
    const credit = page.getByRole('dialog', { name: `Credit ${email}` });
    await credit.getByLabel('Amount (USD)').fill('2.50');
    await credit.getByLabel(/Note/).fill('e2e goodwill');
    await credit.getByRole('button', { name: 'Credit account' }).click();
    // Whole cents added to a cent-rounded figure: the new figure is exact in cents.
    const cents = BigInt(userBalance.replace(/[$,.]/g, '')) + 250n;
    const expected = `$${cents / 100n}.${String(cents % 100n).padStart(2, '0')}`;
    await page.getByText(`Credited $2.50 to ${email}; balance now ${expected}.`).waitFor();
    await userRow.getByText(expected).waitFor();

    await userRow.getByLabel(`Tier of ${email}`).selectOption('pro');
    await page.getByText(`${email} is now on the pro tier.`).waitFor();

    await page.getByLabel('Value (USD)').fill('3');
    await page.getByLabel('How many').fill('2');
    await page.getByRole('button', { name: 'Create codes' }).click();
    const codes = (await page.getByLabel('New redemption codes').inputValue()).split('\n');
    expect(codes).toHaveLength(2);
    for (const code of codes) expect(code).toMatch(/^TG-[0-9A-Z]{4}(-[0-9A-Z]{4}){3}$/);

    // Disable another account: found by search, confirmed, and its key gets 401 at once.
    const other = await gateway.createAccountWithKey(`to-disable-${Date.now()}@example.com`);
    const otherEmail = (await gateway.gateway.accounts.findById(other.accountId)).email;
    expect((await sdk(other.key).models.list()).data.length).toBeGreaterThan(0);
    await page.getByLabel('Search accounts').fill('to-disable-');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await accounts.getByRole('row').nth(1).getByText(otherEmail).waitFor();
    expect(await accounts.getByRole('row').count()).toBe(2);
    await page.getByRole('button', { name: `Disable ${otherEmail}` }).click();
    await page.getByRole('dialog', { name: 'Disable this account?' }).getByRole('button', { name: 'Disable account' }).click();
    await accounts.getByRole('row', { name: new RegExp(otherEmail.replaceAll('.', '\\.')) }).getByText('disabled').waitFor();
    await expect(sdk(other.key).models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    // The operator cannot disable their own account from here.
    await page.getByLabel('Search accounts').fill('');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await accounts.getByRole('row', { name: new RegExp(adminEmail.replaceAll('.', '\\.')) }).waitFor();
    expect(await page.getByRole('button', { name: `Disable ${adminEmail}` }).count()).toBe(0);

    await page.getByRole('heading', { name: 'Upstream credentials' }).waitFor();
    await page.getByRole('table', { name: 'Upstream credentials' }).or(page.getByText(/not available|No upstream credentials/)).first().waitFor();
    await screenshot(page, 'desktop-admin');
  });

  it('offers a Stripe Checkout top-up when the gateway has Stripe configured', async () => {
    const withStripe = await startTestGateway({ env: { STRIPE_SECRET_KEY: 'sk_test_dashboard_e2e', STRIPE_WEBHOOK_SECRET: 'whsec_dashboard_e2e' } });
    const session = await launchChromium(DESKTOP_VIEWPORT);
    try {
      const stripePage = await session.context.newPage();
      await stripePage.goto(`${withStripe.gateway.url}/register`);
      await stripePage.getByLabel('Email').fill(`stripe-${Date.now()}@example.com`);
      await stripePage.getByLabel('Password', { exact: true }).fill(PASSWORD);
      await stripePage.getByRole('button', { name: 'Create account' }).click();
      await stripePage.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
      await openNav(stripePage, 'Billing');
      expect(await stripePage.getByText('Card payments are not enabled').count()).toBe(0);
      await stripePage.getByRole('button', { name: '$50' }).click();
      expect(await stripePage.getByLabel('Amount (USD)').inputValue()).toBe('50');
      // Amounts outside the server's limits are refused before any call to Stripe.
      await stripePage.getByLabel('Amount (USD)').fill('1000000');
      await stripePage.getByRole('button', { name: 'Add credit' }).click();
      await stripePage.getByRole('alert').getByText(/Top-ups are between/).waitFor();
      await stripePage.getByLabel('Amount (USD)').fill('25');
      await screenshot(stripePage, 'desktop-billing-stripe');
    } finally {
      await session.close();
      await withStripe.close();
    }
  });

  it('works on a phone-width screen: top bar, menu, every page', async () => {
    const phone = await launchChromium(PHONE_VIEWPORT);
    try {
      const mobile = await phone.context.newPage();
      await mobile.goto(`${gateway.gateway.url}/login`);
      await mobile.getByRole('heading', { name: 'Log in' }).waitFor();
      await screenshot(mobile, 'phone-login');
      await logIn(mobile, email, password);
      // The sidebar is folded away behind the menu button.
      expect(await mobile.getByRole('navigation', { name: 'Main' }).isVisible()).toBe(false);
      // The chart library loads lazily: wait for the sparkline so the screenshot shows it.
      await mobile.locator('.sparkline .recharts-area').waitFor();
      await screenshot(mobile, 'phone-overview');
      await mobile.getByRole('button', { name: 'Menu' }).click();
      expect(await mobile.getByRole('navigation', { name: 'Main' }).isVisible()).toBe(true);
      await screenshot(mobile, 'phone-menu-open');
      // A user is not an operator: no Operator link, and the API answers 403 with this session.
      expect(await mobile.getByRole('link', { name: 'Operator' }).count()).toBe(0);
      expect(await mobile.evaluate(async () => (await fetch('/api/admin/accounts')).status)).toBe(403);
      await mobile.getByRole('button', { name: 'Close' }).click();
      for (const [label, name] of [
        ['API keys', 'phone-keys'],
        ['Usage', 'phone-usage'],
        ['Billing', 'phone-billing'],
        ['Settings', 'phone-settings'],
      ] as const) {
        await openNav(mobile, label);
        if (label === 'Usage') await mobile.getByRole('figure', { name: 'Tokens per day by model' }).locator('.recharts-bar-rectangle path').first().waitFor();
        // Nothing may overflow the screen sideways (tables scroll inside their own box).
        const overflow = await mobile.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');
        expect(overflow, `${label}: ${await widestElements(mobile)}`).toBeLessThanOrEqual(0);
        await screenshot(mobile, name);
      }
    } finally {
      await phone.close();
    }
  }, 90_000);
});
