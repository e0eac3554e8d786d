import { execFile } from 'node:child_process';
import OpenAI from 'openai';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import { createRedemptionCodes } from '../../src/billing/redemption-codes.js';
import { DESKTOP_VIEWPORT, launchChromium, PHONE_VIEWPORT, type BrowserSession } from '../helpers/chromium-browser.js';
import { createKey, logIn as logInAt, openNav, screenshot } from '../helpers/dashboard-pages.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';
import { allAxeViolations, overflowProblems } from '../helpers/page-checks.js';
import { ensureWebBuild } from '../helpers/web-build.js';
import { formatUsdCents, formatUsd as shownUsd, fromNano, toNano } from '../../web/src/lib/money.js';

/**
 * The dashboard in real Chromium against a real gateway (simulator upstream): register → create a key → the
 * Overview's curl snippet pasted into a shell → usage (filtered by key) → revoke → 401 → redeem a code → the balance
 * rises → upgrade the tier with one click → the new limit in force; then the operator view, and every page on a
 * phone-width screen. Every page state is screenshotted (test/artifacts/screenshots/, for a person to look at),
 * checked for content overflowing its box unseen, and checked by axe-core (no violation of any impact).
 */

/** pro is cheap here, so the $5 code pays for it. */
const TIERS_YAML = `
tiers:
  pro: { requestsPerMinute: 1000, reachedAtTotalPaidUsd: 50, priceUsd: 2, periodDays: 30 }
`;

const PASSWORD = 'correct horse battery staple';
const NEW_PASSWORD = 'a different long passphrase';

let gateway: TestGateway;
let desktop: BrowserSession;
let page: Page;
const email = `dash-${Date.now()}@example.com`;
let secret = '';
let password = PASSWORD;
let rotatedSecret = '';
/** The user's balance as the billing page showed it after paid usage, to the cent ("$4.99"). */
let userBalance = '';
/** The same balance exactly, as the ledger and the card's hover show it ("$4.98984"). */
let userBalanceExact = '';
const adminEmail = `operator-${Date.now()}@example.com`;

/** What `inspect` found on every page state; the last test of the suite requires it empty. */
const pageProblems: string[] = [];

/**
 * A page state: its screenshot, what overflows its box unseen, and axe-core's violations of any impact.
 * Collected (and required empty at the end) so one run lists every page's problems, not only the first.
 */
async function inspect(target: Page, name: string): Promise<void> {
  await screenshot(target, name);
  for (const problem of await overflowProblems(target)) pageProblems.push(`${name}: overflow: ${problem}`);
  for (const violation of await allAxeViolations(target))
    pageProblems.push(
      `${name}: axe ${violation.impact} ${violation.id} (${violation.help}): ${violation.targets.join(' | ')}`,
    );
}

/** The shown figure ("$4.77", "$0.001234") as exact nano-USD. */
function shownNano(text: string): bigint {
  return toNano(text.replace(/[$,]/g, ''));
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

function logIn(target: Page, who: string, secretWord: string): Promise<void> {
  return logInAt(target, gateway.gateway.url, who, secretWord);
}

beforeAll(async () => {
  await ensureWebBuild();
  // A small free allowance, so the test also spends paid credit once it has some.
  gateway = await startTestGateway({ env: { FREE_TOKENS_PER_DAY: '1000' }, yaml: TIERS_YAML });
  desktop = await launchChromium(DESKTOP_VIEWPORT);
  page = await desktop.context.newPage();
}, 180_000);

afterAll(async () => {
  await desktop?.close();
  await gateway?.close();
});

// Generous hang bounds: every page state also runs axe-core, and the machine is shared.
describe('dashboard in Chromium', { timeout: 120_000 }, () => {
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

    // Served precompressed (brotli, else gzip), and the log-in page loads little: React and the form, no page code.
    let loginBytes = 0;
    for (const path of html.match(/\/assets\/[^"]+\.(js|css)/g) ?? []) {
      const brotli = await fetch(`${gateway.gateway.url}${path}`, { headers: { 'accept-encoding': 'br' } });
      expect(brotli.headers.get('content-encoding'), path).toBe('br');
      loginBytes += Number(brotli.headers.get('content-length'));
      await brotli.arrayBuffer();
      const gzip = await fetch(`${gateway.gateway.url}${path}`, { headers: { 'accept-encoding': 'gzip' } });
      expect(gzip.headers.get('content-encoding'), path).toBe('gzip');
      await gzip.arrayBuffer();
    }
    expect(loginBytes).toBeGreaterThan(0);
    expect(loginBytes).toBeLessThan(100_000);
    // The precompressed copies are not files of their own.
    expect((await fetch(`${gateway.gateway.url}${script}.br`)).status).toBe(404);
  });

  it('registers with the password rules stated on the form, and lands on the overview', async () => {
    await page.goto(`${gateway.gateway.url}/`);
    await page.getByRole('heading', { name: 'Log in' }).waitFor();
    await inspect(page, 'desktop-login');
    await page.getByRole('link', { name: 'Create an account' }).click();
    await page.getByRole('heading', { name: 'Create your account' }).waitFor();
    expect(await page.getByText('10 to 200 characters, and not your email address.').isVisible()).toBe(true);

    // A too-short password is refused by the server, with the message next to the field.
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password', { exact: true }).fill('short');
    await page.getByLabel('Password', { exact: true }).evaluate((input) => input.removeAttribute('minlength'));
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByText(/at least 10 characters/).waitFor();
    await inspect(page, 'desktop-register-error');

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
    await inspect(page, 'desktop-keys-created-dialog');
    await dialog.getByRole('button', { name: 'Done' }).click();
    await dialog.waitFor({ state: 'hidden' });

    const row = page.getByRole('row', { name: /e2e backend/ });
    await row.waitFor();
    expect(await row.textContent()).toContain(secret.slice(-4));
    expect(await row.textContent()).toContain('Active');
    // The list shows only the hint: the full key is nowhere on the page any more.
    expect(await page.content()).not.toContain(secret);

    const client = sdk(secret);
    const first = await client.chat.completions.create({
      model: 'alpha-sonnet-5',
      messages: [{ role: 'user', content: 'Hello from the dashboard test' }],
    });
    expect(first.choices[0]?.message.content).toBeTruthy();
    await client.chat.completions.create({
      model: 'gamma-2.5-pro',
      messages: [{ role: 'user', content: 'A second model for the stacked chart' }],
    });
    const stream = await client.chat.completions.create({
      model: 'beta-5.4',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'Streamed' }],
    });
    for await (const _chunk of stream) {
      // drain
    }
    // A second key, with a long name without spaces: it wraps in its cell instead of pushing the table out.
    const notebook = await createKey(page, 'notebook-experiments-with-a-very-long-name-without-any-spaces-at-all');
    await sdk(notebook).chat.completions.create({
      model: 'delta-v4-flash',
      messages: [{ role: 'user', content: 'From the notebook' }],
    });
    await page.reload();
    await page.getByRole('row', { name: /e2e backend/ }).waitFor();
    await inspect(page, 'desktop-keys');
  });

  it("answers the Overview's curl snippet pasted into a shell with the key", async () => {
    await openNav(page, 'Overview');
    await page.getByRole('tab', { name: 'curl' }).click();
    const snippet = (await page.getByRole('tabpanel').textContent()) ?? '';
    // It reads the key the user exported and never assigns one (a placeholder there would overwrite it).
    expect(snippet).not.toContain('export TOLLGATE_API_KEY=');
    expect(snippet).toContain('$TOLLGATE_API_KEY');
    // What a user does: paste it as it is, in a shell where their key is exported.
    const env = { PATH: process.env.PATH ?? '', TOLLGATE_API_KEY: secret };
    const output = await new Promise<string>((resolve, reject) =>
      execFile('bash', ['-e', '-c', snippet], { env }, (error, stdout, stderr) =>
        error === null ? resolve(stdout) : reject(new Error(`${error.message}\n${stderr}`)),
      ),
    );
    const reply = JSON.parse(output) as { object: string; choices: Array<{ message: { content: string } }> };
    expect(reply.object).toBe('chat.completion');
    expect(reply.choices[0]!.message.content.length).toBeGreaterThan(0);
  });

  it('shows the requests in the usage table, the charts and the breakdowns', async () => {
    await openNav(page, 'Usage');
    const requests = page.getByRole('table', { name: 'Recent requests' });
    await requests.waitFor();
    for (const model of ['alpha-sonnet-5', 'gamma-2.5-pro', 'beta-5.4', 'delta-v4-flash']) {
      await requests
        .getByRole('row', { name: new RegExp(model.replaceAll('.', '\\.')) })
        .first()
        .waitFor();
    }
    expect(await requests.getByRole('row').count()).toBe(6); // header + 5 requests (3 SDK, the snippet, the notebook)
    expect(await requests.textContent()).toContain('e2e backend');

    // The charts render bars from the real records: one stacked segment per model on today's bar.
    const tokenChart = page.getByRole('figure', { name: 'Tokens per day by model' });
    await tokenChart.locator('.recharts-bar-rectangle path').first().waitFor();
    expect(await tokenChart.locator('.recharts-bar-rectangle path').count()).toBe(4);
    const legend = await tokenChart.locator('.recharts-legend-wrapper').textContent();
    for (const model of ['alpha-sonnet-5', 'gamma-2.5-pro', 'beta-5.4', 'delta-v4-flash'])
      expect(legend).toContain(model);
    // A distinct colour per model.
    const colours = await tokenChart
      .locator('.recharts-bar-rectangle path')
      .evaluateAll((paths) => paths.map((path) => path.getAttribute('fill')));
    expect(new Set(colours).size).toBe(4);
    expect(
      await page.getByRole('figure', { name: 'Cost per day by model' }).locator('.recharts-surface').count(),
    ).toBeGreaterThan(0);

    const byModel = page.getByRole('table', { name: 'Usage by model' });
    expect(await byModel.getByRole('row').count()).toBe(5);
    const byKey = page.getByRole('table', { name: 'Usage by key' });
    // Requests column of the key's row: the three SDK requests and the snippet's.
    expect(
      await byKey
        .getByRole('row', { name: /e2e backend/ })
        .getByRole('cell')
        .first()
        .textContent(),
    ).toBe('4');
    await inspect(page, 'desktop-usage-all');

    // Filtered by key: the notebook's one request, in the charts, the breakdowns and the recent requests.
    const notebookOption = await page
      .getByLabel('Key', { exact: true })
      .locator('option', { hasText: 'notebook' })
      .getAttribute('value');
    await page.getByLabel('Key', { exact: true }).selectOption(notebookOption!);
    await byKey.getByRole('row', { name: /e2e backend/ }).waitFor({ state: 'detached' });
    expect(await byModel.getByRole('row').count()).toBe(2);
    await requests.getByRole('row').nth(2).waitFor({ state: 'detached' });
    expect(await requests.getByRole('row').count()).toBe(2);
    expect(await requests.textContent()).toContain('delta-v4-flash');
    await inspect(page, 'desktop-usage-filtered');
    await page.getByLabel('Key', { exact: true }).selectOption('');
    await byKey.getByRole('row', { name: /e2e backend/ }).waitFor();

    await page.getByRole('radio', { name: '7 days' }).click();
    await tokenChart.locator('.recharts-bar-rectangle path').first().waitFor();
    expect(await page.getByRole('link', { name: 'Export CSV' }).getAttribute('href')).toBe(
      '/api/usage/export.csv?days=7',
    );
    const download = page.waitForEvent('download');
    await page.getByRole('link', { name: 'Export CSV' }).click();
    const file = await download;
    expect(file.suggestedFilename()).toMatch(/\.csv$/);
    await inspect(page, 'desktop-usage');
  });

  it('revokes the key after confirmation, and the SDK then gets 401', async () => {
    await openNav(page, 'API keys');
    await page.getByRole('button', { name: 'Revoke e2e backend' }).click();
    const confirm = page.getByRole('dialog', { name: 'Revoke this key?' });
    await confirm.waitFor();
    await inspect(page, 'desktop-keys-revoke-confirm');
    await confirm.getByRole('button', { name: 'Revoke key' }).click();
    await confirm.waitFor({ state: 'hidden' });
    // Revoked keys are listed apart, folded away.
    await page.getByText('Revoked and expired keys (1)').click();
    await page
      .getByRole('table', { name: 'Revoked and expired keys' })
      .getByRole('row', { name: /e2e backend/ })
      .getByText('revoked')
      .waitFor();
    expect(
      await page
        .getByRole('table', { name: 'API keys' })
        .getByRole('row', { name: /e2e backend/ })
        .count(),
    ).toBe(0);
    await inspect(page, 'desktop-keys-revoked');

    const error = await sdk(secret)
      .chat.completions.create({ model: 'alpha-sonnet-5', messages: [{ role: 'user', content: 'after revocation' }] })
      .then(
        () => null,
        (reason: unknown) => reason,
      );
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
      await client.chat.completions.create({
        model,
        max_tokens: 2000,
        messages: [{ role: 'user', content: 'Spend some credit [[sim words=600]]' }],
      });
    }
    await page.reload();
    const ledger = page.getByRole('table', { name: 'Ledger' });
    await ledger.getByRole('row', { name: /Usage/ }).first().waitFor();
    const usageRow = ledger.getByRole('row', { name: /Usage/ }).first();
    expect(await usageRow.textContent()).toMatch(/-\$0\.\d+/);
    // The row says what was used: the model, tokens in and out, the key, and links to the request.
    expect(await usageRow.textContent()).toMatch(/(alpha-sonnet-5|beta-5\.4) · [\d,]+ in \/ [\d,]+ out · key rotating/);
    // The running balance adds up on screen: each row's balance is the one below it plus its amount, exactly.
    const cells = await ledger
      .getByRole('row')
      .evaluateAll((rows) =>
        rows
          .slice(1)
          .map((row) =>
            [...row.querySelectorAll('td')].map((cell) => (cell.textContent ?? '').replace(/^(Amount|Balance): /, '')),
          ),
      );
    for (let index = 0; index < cells.length - 1; index += 1) {
      const [amount, after] = cells[index]!.slice(-2);
      const before = cells[index + 1]!.slice(-1)[0]!;
      expect(shownNano(before) + shownNano(amount!.replace('+', '')), `${before} ${amount} = ${after}`).toBe(
        shownNano(after!),
      );
    }
    // The balance card is a summary: to the cent, the ledger's exact running balance on hover.
    const balance = (await page.getByTestId('balance').textContent()) ?? '';
    userBalance = balance;
    userBalanceExact = cells[0]!.slice(-1)[0]!;
    expect(shownNano(userBalanceExact)).toBeLessThan(parseUsd('5'));
    expect(balance).toBe(formatUsdCents(fromNano(shownNano(userBalanceExact))));
    expect(await page.getByTestId('balance').getAttribute('title')).toBe(`Exactly ${userBalanceExact}`);
    await inspect(page, 'desktop-billing');

    await usageRow.getByRole('link', { name: 'request details' }).click();
    await page.getByRole('heading', { level: 2, name: /^Request req_/ }).waitFor();
    expect(await page.getByRole('region', { name: /^Request req_/ }).textContent()).toContain('rotating');
    await inspect(page, 'desktop-usage-request');

    await openNav(page, 'Usage');
    const costChart = page.getByRole('figure', { name: 'Cost per day by model' });
    await costChart.locator('.recharts-bar-rectangle path').first().waitFor();
    expect(await costChart.locator('.recharts-bar-rectangle path').count()).toBeGreaterThanOrEqual(1);
    await inspect(page, 'desktop-usage-paid');
  });

  it("shows what a key's spend limit left unbilled on the ledger and in the usage breakdown", async () => {
    const created = await fetch(`${gateway.gateway.url}/v1/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${rotatedSecret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'capped', spend_limit: { usd: '0.01', period: 'day' } }),
    });
    expect(created.status).toBe(201);
    const capped = (await created.json()) as { key: string };
    // The vendor counts 10,000 prompt and 10 output tokens ($0.02515 on beta-5.4): the key's $0.01 pays 4,000 of
    // them, the other 6,010 ($0.01515) are left unbilled.
    await sdk(capped.key).chat.completions.create({
      model: 'beta-5.4',
      max_tokens: 20,
      messages: [{ role: 'user', content: 'Over the limit [[sim words=3 prompt-tokens=10000 output-tokens=10]]' }],
    });
    await openNav(page, 'Billing');
    const ledger = page.getByRole('table', { name: 'Ledger' });
    const cappedRow = ledger.getByRole('row', { name: /key capped/ });
    await cappedRow.waitFor();
    expect(await cappedRow.textContent()).toMatch(/6,010 unbilled \(\$0\.01515\).*-\$0\.01\b/);

    await openNav(page, 'Usage');
    const byKey = page.getByRole('table', { name: 'Usage by key' });
    const keyRow = byKey.getByRole('row', { name: /capped/ });
    await keyRow.waitFor();
    expect(await keyRow.getByRole('cell').last().textContent()).toBe('6,010 ($0.01515)');
    await inspect(page, 'desktop-usage-unbilled');
  });

  it('upgrades the tier from the balance in one action, and the next request runs at the new limit', async () => {
    const before = await sdk(rotatedSecret)
      .chat.completions.create({ model: 'beta-5.4', max_tokens: 16, messages: [{ role: 'user', content: 'limit?' }] })
      .withResponse();
    expect(before.response.headers.get('x-ratelimit-limit-requests')).toBe('100');
    await openNav(page, 'Overview');
    const tiers = page.getByRole('table', { name: 'Rate-limit tiers' });
    expect(await tiers.getByRole('row', { name: /^pro/ }).textContent()).toContain(
      '$2.00 per 30 days from your balance',
    );
    await inspect(page, 'desktop-overview-before-upgrade');
    await tiers.getByRole('button', { name: 'Upgrade to pro' }).click();
    const dialog = page.getByRole('dialog', { name: 'Upgrade to pro?' });
    await dialog.waitFor();
    await inspect(page, 'desktop-upgrade-confirm');
    await dialog.getByRole('button', { name: 'Pay $2.00 and upgrade' }).click();
    await page.getByText(/You are on the pro tier now/).waitFor();
    // The table shows the tier bought in the same render as the message.
    expect(await tiers.getByRole('row', { name: /^pro/ }).textContent()).toContain('current');
    await page.getByText(/Bought until/).waitFor();
    const after = await sdk(rotatedSecret)
      .chat.completions.create({ model: 'beta-5.4', max_tokens: 16, messages: [{ role: 'user', content: 'limit?' }] })
      .withResponse();
    expect(after.response.headers.get('x-ratelimit-limit-requests')).toBe('1000');

    await openNav(page, 'Billing');
    const tierRow = page.getByRole('table', { name: 'Ledger' }).getByRole('row', { name: /Tier/ });
    await tierRow.waitFor();
    expect(await tierRow.textContent()).toContain('-$2.00');
    userBalance = (await page.getByTestId('balance').textContent()) ?? '';
    userBalanceExact =
      (await page.getByTestId('balance').getAttribute('title'))?.replace('Exactly ', '') ?? userBalance;
  });

  it('shows the overview with balance, allowance, tiers and quick-start snippets filled with the base URL', async () => {
    await openNav(page, 'Overview');
    const balance = page.getByRole('region', { name: 'Balance', exact: true });
    await balance.getByText(userBalance, { exact: true }).waitFor();
    await page.getByRole('region', { name: 'Free tokens left today', exact: true }).waitFor();
    // 3 SDK requests, the notebook's, the snippet's, 2 paid ones, the capped key's and the 2 around the upgrade.
    expect(await page.getByRole('region', { name: 'Today', exact: true }).textContent()).toContain('10 requests');
    await page.getByRole('tab', { name: 'Python' }).click();
    expect(await page.getByRole('tabpanel').textContent()).toContain(`base_url="${gateway.gateway.url}/v1"`);
    await page.getByRole('tab', { name: 'TypeScript' }).click();
    expect(await page.getByRole('tabpanel').textContent()).toContain('import OpenAI from "openai"');
    await page.getByRole('tab', { name: 'curl' }).click();
    const tiers = page.getByRole('table', { name: 'Rate-limit tiers' });
    expect(await tiers.getByRole('row', { name: /^pro/ }).textContent()).toContain('current');
    // Words for users: no operator commands or settings on the Overview.
    expect(await page.locator('main').textContent()).not.toMatch(/tollgate |npm run|STRIPE_|--email/);
    await inspect(page, 'desktop-overview');
    // The sparkline draws today's spend from the real records.
    await page.locator('.sparkline .recharts-bar-rectangle').first().waitFor();
    // The dark variant (prefers-color-scheme) of the same page, for a person to look at.
    await page.emulateMedia({ colorScheme: 'dark' });
    await inspect(page, 'desktop-overview-dark');
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
    await inspect(page, 'desktop-settings');
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
    // The message is exact (the balance plus $2.50); the list, a summary, shows it to the cent.
    const newBalance = fromNano(shownNano(userBalanceExact) + parseUsd('2.5'));
    await page.getByText(`Credited $2.50 to ${email}; balance now ${shownUsd(newBalance)}.`).waitFor();
    await userRow.getByText(formatUsdCents(newBalance)).waitFor();

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
    await page
      .getByRole('dialog', { name: 'Disable this account?' })
      .getByRole('button', { name: 'Disable account' })
      .click();
    await accounts
      .getByRole('row', { name: new RegExp(otherEmail.replaceAll('.', '\\.')) })
      .getByText('disabled')
      .waitFor();
    await expect(sdk(other.key).models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    // The operator cannot disable their own account from here.
    await page.getByLabel('Search accounts').fill('');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await accounts.getByRole('row', { name: new RegExp(adminEmail.replaceAll('.', '\\.')) }).waitFor();
    expect(await page.getByRole('button', { name: `Disable ${adminEmail}` }).count()).toBe(0);

    await page.getByRole('heading', { name: 'Upstream credentials' }).waitFor();
    await page
      .getByRole('table', { name: 'Upstream credentials' })
      .or(page.getByText(/not available|No upstream credentials/))
      .first()
      .waitFor();
    await inspect(page, 'desktop-admin');
  });

  it('offers a Stripe Checkout top-up when the gateway has Stripe configured', async () => {
    const withStripe = await startTestGateway({
      env: { STRIPE_SECRET_KEY: 'sk_test_dashboard_e2e', STRIPE_WEBHOOK_SECRET: 'whsec_dashboard_e2e' },
    });
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
      await stripePage
        .getByRole('alert')
        .getByText(/Top-ups are between/)
        .waitFor();
      await stripePage.getByLabel('Amount (USD)').fill('25');
      await inspect(stripePage, 'desktop-billing-stripe');
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
      await inspect(mobile, 'phone-login');
      await mobile.getByRole('link', { name: 'Create an account' }).click();
      await mobile.getByRole('heading', { name: 'Create your account' }).waitFor();
      await inspect(mobile, 'phone-register');
      await mobile.goto(`${gateway.gateway.url}/login`);
      await mobile.getByRole('heading', { name: 'Log in' }).waitFor();
      await logIn(mobile, email, password);
      // The sidebar is folded away behind the menu button.
      expect(await mobile.getByRole('navigation', { name: 'Main' }).isVisible()).toBe(false);
      // The chart library loads lazily: wait for the sparkline so the screenshot shows it.
      await mobile.locator('.sparkline .recharts-bar-rectangle').first().waitFor();
      await inspect(mobile, 'phone-overview');
      await mobile.getByRole('button', { name: 'Menu' }).click();
      expect(await mobile.getByRole('navigation', { name: 'Main' }).isVisible()).toBe(true);
      await inspect(mobile, 'phone-menu-open');
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
        if (label === 'Usage')
          await mobile
            .getByRole('figure', { name: 'Tokens per day by model' })
            .locator('.recharts-bar-rectangle path')
            .first()
            .waitFor();
        // Nothing may overflow the screen sideways (tables scroll inside their own box).
        const overflow = await mobile.evaluate<number>(
          'document.documentElement.scrollWidth - document.documentElement.clientWidth',
        );
        expect(overflow, `${label}: ${await widestElements(mobile)}`).toBeLessThanOrEqual(0);
        await inspect(mobile, name);
      }
      // The ledger's request link, the folded revoked keys and the operator view on a phone too.
      await openNav(mobile, 'Billing');
      await mobile.getByRole('link', { name: 'request details' }).first().click();
      await mobile.getByRole('heading', { level: 2, name: /^Request req_/ }).waitFor();
      await inspect(mobile, 'phone-usage-request');
      await openNav(mobile, 'API keys');
      await mobile.locator('summary', { hasText: 'Revoked and expired keys' }).click();
      await inspect(mobile, 'phone-keys-revoked');
      await mobile.getByRole('button', { name: 'Menu' }).click();
      await mobile.getByRole('button', { name: 'Log out' }).click();
      await mobile.getByRole('heading', { name: 'Log in' }).waitFor();
      // A deep link while logged out: after logging in, the page asked for.
      await mobile.goto(`${gateway.gateway.url}/admin`);
      await mobile.getByRole('heading', { name: 'Log in' }).waitFor();
      await mobile.getByLabel('Email').fill(adminEmail);
      await mobile.getByLabel('Password', { exact: true }).fill(PASSWORD);
      await mobile.getByRole('button', { name: 'Log in' }).click();
      await mobile.getByRole('heading', { level: 1, name: 'Operator' }).waitFor();
      expect(new URL(mobile.url()).pathname).toBe('/admin');
      await mobile.getByRole('table', { name: 'Accounts' }).getByRole('row').nth(1).waitFor();
      await inspect(mobile, 'phone-admin');
    } finally {
      await phone.close();
    }
  }, 300_000);

  it('found nothing clipped and no accessibility violation of any impact on any page, at either size', () => {
    expect(pageProblems).toEqual([]);
  });
});
