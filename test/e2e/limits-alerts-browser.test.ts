import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DESKTOP_VIEWPORT, launchChromium, PHONE_VIEWPORT, type BrowserSession } from '../helpers/chromium-browser.js';
import { DashboardClient, PASSWORD, uniqueEmail } from '../helpers/dashboard-client.js';
import { logIn, openNav, screenshot } from '../helpers/dashboard-pages.js';
import { allAxeViolations, overflowProblems } from '../helpers/page-checks.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';
import { ensureWebBuild } from '../helpers/web-build.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * The Limits & alerts page in real Chromium, at 1280x800 and 390x844: an organisation limit is set with its spend bar
 * and cleared; a bad webhook URL is refused on its field, a low-balance alert is created (its signing secret shown
 * once), fires at once on a balance already below it, and its webhook delivery is listed with its status; the alert
 * is deleted. Every state is axe clean and clips nothing.
 */

let harness: TestGateway;
let receiver: WebhookReceiver;

beforeAll(async () => {
  await ensureWebBuild();
  receiver = await startWebhookReceiver();
  harness = await startTestGateway({ vendors: ['openai'], env: { WEBHOOK_ALLOW_HTTP_LOOPBACK: 'true' } });
}, 180_000);

afterAll(async () => {
  await harness?.close();
  await receiver?.close();
});

async function checked(page: Page, name: string): Promise<void> {
  await screenshot(page, name);
  expect(await overflowProblems(page), `${name}: overflow`).toEqual([]);
  expect(await allAxeViolations(page), `${name}: axe`).toEqual([]);
}

describe.each([
  { size: 'desktop', viewport: DESKTOP_VIEWPORT },
  { size: 'phone', viewport: PHONE_VIEWPORT },
])('limits and alerts page on a $size screen', ({ size, viewport }) => {
  let browser: BrowserSession;
  let page: Page;

  beforeAll(async () => {
    const email = uniqueEmail(`alerts-${size}-person-with-a-rather-long-address`);
    const client = new DashboardClient(harness.gateway.url);
    expect((await client.register(email, PASSWORD)).status).toBe(201);
    browser = await launchChromium(viewport);
    page = await browser.context.newPage();
    await logIn(page, harness.gateway.url, email, PASSWORD);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
  });

  it('sets an organisation limit, shows its spend bar, and clears it', async () => {
    await openNav(page, 'Limits & alerts');
    await page.getByText('No spend limits: requests are limited by the balance only.').waitFor();
    await page.getByLabel('Period').selectOption('week');
    await page.getByLabel('Limit (USD)').fill('12.5');
    await page.getByRole('button', { name: 'Set limit' }).click();
    await page.getByText('The limit is $12.50 per week.').waitFor();
    const bar = page.getByRole('meter', { name: /Spend of .* per week/ });
    await bar.waitFor();
    expect(await bar.getAttribute('aria-valuetext')).toBe('0% used');
    await checked(page, `limits-set-${size}`);
    await page.getByRole('button', { name: /Clear the limit of .* per week/ }).click();
    await page.getByText('No spend limits: requests are limited by the balance only.').waitFor();
  });

  it('refuses a bad webhook URL on its field, then creates an alert that fires and is delivered', async () => {
    await openNav(page, 'Limits & alerts');
    await page.getByText('No alerts yet.').waitFor();
    await checked(page, `alerts-empty-${size}`);

    await page.getByLabel('Amount (USD)').fill('5');
    await page.getByLabel('Webhook URL (optional)').fill('http://hooks.example.com/alerts');
    await page.getByRole('button', { name: 'Create alert' }).click();
    const fieldError = page.getByText(/The webhook URL must be https/);
    await fieldError.waitFor();
    expect(await page.getByLabel('Webhook URL (optional)').getAttribute('aria-invalid')).toBe('true');
    await checked(page, `alerts-refused-${size}`);

    await page.getByLabel('Webhook URL (optional)').fill(`${receiver.url}?token=${'long-receiver-token-'.repeat(4)}`);
    await page.getByRole('button', { name: 'Create alert' }).click();
    const dialog = page.getByRole('dialog', { name: "Save the webhook's signing secret" });
    await dialog.waitFor();
    expect(await dialog.getByLabel('Webhook signing secret').inputValue()).toMatch(/^whsec_/);
    await checked(page, `alerts-secret-${size}`);
    await dialog.getByRole('button', { name: 'Done' }).click();
    await dialog.waitFor({ state: 'hidden' });

    // A new person's balance is 0, below $5: the alert fires at once, and its webhook is delivered.
    const deliveries = page.getByRole('region', { name: 'Deliveries, scrollable' });
    await expect
      .poll(
        async () => {
          await page.getByRole('button', { name: 'Refresh' }).click();
          return deliveries.getByText('delivered').count();
        },
        { timeout: 20_000, interval: 500 },
      )
      .toBe(1);
    expect(
      await page.getByRole('region', { name: 'Recent firings, scrollable' }).getByText('Balance below $5.00').count(),
    ).toBe(1);
    await checked(page, `alerts-delivered-${size}`);

    await page.getByRole('button', { name: 'Delete the alert: Balance below $5.00' }).click();
    const confirm = page.getByRole('dialog', { name: 'Delete alert' });
    await confirm.getByRole('button', { name: 'Delete' }).click();
    await page.getByText('No alerts yet.').waitFor();
    // What it sent stays listed.
    expect(await deliveries.getByText('delivered').count()).toBe(1);
    await checked(page, `alerts-deleted-${size}`);
  });
});
