import OpenAI from 'openai';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import { DESKTOP_VIEWPORT, launchChromium, type BrowserSession } from '../helpers/chromium-browser.js';
import { logIn, screenshot } from '../helpers/dashboard-pages.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';
import { ensureWebBuild } from '../helpers/web-build.js';

/**
 * The keys page with scopes and limits in real Chromium against a real gateway: create a key limited
 * to one family with a daily spend limit and a rate limit, use it with the OpenAI SDK (its family served, another
 * refused), see its spend against the limit on a bar, then edit the limit. Screenshots in test/artifacts/screenshots/.
 */

const PASSWORD = 'correct horse battery staple';

let gateway: TestGateway;
let desktop: BrowserSession;
let page: Page;
const email = `keylimits-${Date.now()}@example.com`;

beforeAll(async () => {
  await ensureWebBuild();
  gateway = await startTestGateway({ env: { FREE_TOKENS_PER_DAY: '0' } });
  const account = await gateway.gateway.accounts.create({ email, password: PASSWORD });
  await gateway.gateway.storage.billing.credit({
    accountId: account.id,
    kind: 'topup',
    amountNano: parseUsd('5'),
    idempotencyKey: `t-${account.id}`,
    note: null,
    at: Date.now(),
  });
  desktop = await launchChromium(DESKTOP_VIEWPORT);
  page = await desktop.context.newPage();
}, 180_000);

afterAll(async () => {
  await desktop?.close();
  await gateway?.close();
});

describe('keys page: scopes and limits', () => {
  it('creates a limited key, shows its spend against the limit, and edits the limit', async () => {
    await logIn(page, gateway.gateway.url, email, PASSWORD);
    await page.goto(`${gateway.gateway.url}/keys`);
    await page.getByRole('heading', { level: 1, name: 'API keys' }).waitFor();

    await page.getByLabel('Name', { exact: true }).fill('ci gamma');
    await page.getByText('Permissions and limits').click();
    await page.getByLabel('Choose scopes').check();
    await page.getByRole('checkbox', { name: /usage:read/ }).check();
    await page.getByLabel('Models', { exact: true }).fill('gamma');
    await page.getByLabel('Spend limit (USD)').fill('0.05');
    await page.getByLabel('Per', { exact: true }).selectOption('day');
    await page.getByLabel('Requests / min').fill('10');
    await screenshot(page, 'desktop-keys-create-limited');
    await page.getByRole('button', { name: 'Create key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Save your key' });
    await dialog.waitFor();
    const secret = await dialog.getByLabel('Your new API key').inputValue();
    await dialog.getByRole('button', { name: 'Done' }).click();

    const client = new OpenAI({ apiKey: secret, baseURL: gateway.openaiBaseUrl, maxRetries: 0 });
    await client.chat.completions.create({
      model: 'gamma-2.5-pro',
      messages: [{ role: 'user', content: 'Hello [[sim words=40]]' }],
      max_completion_tokens: 100,
    });
    await expect(
      client.chat.completions.create({ model: 'beta-5.4', messages: [{ role: 'user', content: 'no' }] }),
    ).rejects.toBeInstanceOf(OpenAI.PermissionDeniedError);
    const listed = (await gateway.gateway.keys.list((await gateway.gateway.accounts.findByEmail(email)).id)).find(
      (key) => key.name === 'ci gamma',
    )!;
    expect(listed.permissions).toMatchObject({
      scopes: ['models:use', 'usage:read'],
      models: ['gamma'],
      rateLimit: { requestsPerMinute: 10 },
    });
    expect(listed.spend.usedNano).toBeGreaterThan(0n);

    await page.reload();
    const row = page.getByRole('row', { name: /ci gamma/ });
    await row.waitFor();
    expect(await row.textContent()).toContain('models:use, usage:read · gamma · 10 req/min');
    expect(await row.textContent()).toMatch(/\$0\.0\d+ of \$0\.05 today \(UTC\)/);
    const meter = row.getByRole('meter');
    expect(Number(await meter.getAttribute('value'))).toBeGreaterThan(0);
    expect(await meter.getAttribute('max')).toBe('0.05');
    await screenshot(page, 'desktop-keys-limits');

    await page.getByRole('button', { name: 'Edit ci gamma' }).click();
    const edit = page.getByRole('dialog', { name: 'Edit “ci gamma”' });
    await edit.waitFor();
    await edit.getByLabel('Spend limit (USD)').fill('1');
    await edit.getByLabel('Models', { exact: true }).fill('gamma, beta-5.4');
    await screenshot(page, 'desktop-keys-edit');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await edit.waitFor({ state: 'hidden' });
    await page.getByText('the change applies from its next request').waitFor();
    await page
      .getByRole('row', { name: /ci gamma/ })
      .getByText(/of \$1 today/)
      .waitFor();
    await expect(
      client.chat.completions.create({ model: 'beta-5.4', messages: [{ role: 'user', content: 'now yes' }] }),
    ).resolves.toBeDefined();

    // A bad value is refused with the field named, and nothing changes.
    await page.getByRole('button', { name: 'Edit ci gamma' }).click();
    await edit.getByLabel('Spend limit (USD)').fill('ten');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await edit.getByText(/spend_limit\.usd/).waitFor();
    await edit.getByRole('button', { name: 'Cancel' }).click();
    expect(await page.getByRole('row', { name: /ci gamma/ }).textContent()).toMatch(/of \$1 today/);
  }, 120_000);

  it('filters usage by key', async () => {
    const accountId = (await gateway.gateway.accounts.findByEmail(email)).id;
    const other = await gateway.gateway.keys.create(accountId, accountId, { name: 'other service' });
    const client = new OpenAI({ apiKey: other.secret, baseURL: gateway.openaiBaseUrl, maxRetries: 0 });
    await client.chat.completions.create({
      model: 'delta-v4-flash',
      messages: [{ role: 'user', content: 'from the other key' }],
    });
    await page.goto(`${gateway.gateway.url}/usage`);
    const requests = page.getByRole('table', { name: 'Recent requests' });
    await requests.getByRole('row', { name: /delta-v4-flash/ }).waitFor();
    expect(await requests.getByRole('row').count()).toBe(4); // header + 2 with ci gamma + 1 with the other key

    // The Usage page's key filter (the dashboard's, with the model filter beside it): its options are the keys with usage.
    await page
      .getByLabel('Key', { exact: true })
      .selectOption((await gateway.gateway.keys.list(accountId)).find((key) => key.name === 'ci gamma')!.id);
    await requests.getByRole('row', { name: /delta-v4-flash/ }).waitFor({ state: 'detached' });
    // The filtered list loads after the old one is gone: wait for its rows, not only for the old row to leave.
    await requests
      .getByRole('row', { name: /ci gamma/ })
      .nth(1)
      .waitFor();
    expect(await requests.getByRole('row').count()).toBe(3);
    expect(await requests.textContent()).not.toContain('other service');
    const byKey = page.getByRole('table', { name: 'Usage by key' });
    expect(await byKey.getByRole('row', { name: /other service/ }).count()).toBe(0);
    await screenshot(page, 'desktop-usage-by-key');
  }, 60_000);
});
