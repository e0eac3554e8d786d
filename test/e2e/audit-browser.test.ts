import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DESKTOP_VIEWPORT, launchChromium, PHONE_VIEWPORT, type BrowserSession } from '../helpers/chromium-browser.js';
import { DashboardClient, PASSWORD, uniqueEmail } from '../helpers/dashboard-client.js';
import { logIn, openNav, screenshot } from '../helpers/dashboard-pages.js';
import { overflowProblems, allAxeViolations } from '../helpers/page-checks.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';
import { ensureWebBuild } from '../helpers/web-build.js';

/**
 * The audit log page, the billing details form and a printed receipt in real Chromium, at 1280x800 and 390x844:
 * the events a person caused are listed and filtered; the receipt link on the ledger opens the receipt with the
 * billing details; every state is axe clean (no violation of any impact) and clips nothing.
 */

let harness: TestGateway;
let email: string;
let receiptPath: string;

beforeAll(async () => {
  await ensureWebBuild();
  harness = await startTestGateway({ vendors: ['openai'] });
  const operatorEmail = uniqueEmail('audit-operator');
  await harness.gateway.accounts.create({ email: operatorEmail, password: PASSWORD, role: 'admin' });
  const operator = new DashboardClient(harness.gateway.url);
  await operator.login(operatorEmail, PASSWORD);

  // A person with a history: keys made, one renamed, billing details, an operator credit (a payment with a receipt).
  email = uniqueEmail('audit-page-person-with-a-rather-long-address');
  const client = new DashboardClient(harness.gateway.url);
  const registered = await client.register(email, PASSWORD);
  const accountId = registered.json.account.id as string;
  const key = await client.post('/api/keys', { name: 'production-server-with-a-long-name' });
  await client.call('PATCH', `/api/keys/${key.json.key.id}`, { name: 'production', scopes: ['models:use'] });
  await client.post('/api/keys', { name: 'laptop' });
  await client.call('PUT', '/api/organisation/billing-details', {
    billingName: 'Browser Test Industries GmbH',
    billingAddress: 'Hauptstraße 1\n10115 Berlin\nGermany',
  });
  await operator.post(`/api/admin/accounts/${accountId}/credit`, { amountUsd: '7.5' });
  const [entry] = await harness.gateway.storage.billing.ledger(accountId, 1);
  receiptPath = `/api/receipts/${entry!.id}`;
}, 180_000);

afterAll(async () => {
  await harness?.close();
});

async function checked(page: Page, name: string): Promise<void> {
  await screenshot(page, name);
  expect(await overflowProblems(page), `${name}: overflow`).toEqual([]);
  expect(await allAxeViolations(page), `${name}: axe`).toEqual([]);
}

describe.each([
  { size: 'desktop', viewport: DESKTOP_VIEWPORT },
  { size: 'phone', viewport: PHONE_VIEWPORT },
])('audit log and receipt pages on a $size screen', ({ size, viewport }) => {
  let browser: BrowserSession;
  let page: Page;

  beforeAll(async () => {
    browser = await launchChromium(viewport);
    page = await browser.context.newPage();
    await logIn(page, harness.gateway.url, email, PASSWORD);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
  });

  it('lists the events with their actors, filters them, and opens the changes', async () => {
    await openNav(page, 'Audit log');
    const rows = page.getByRole('region', { name: 'Audit events, scrollable' }).locator('tbody tr');
    // The changes of the set-up, besides this page's own sign-ins (one per screen so far).
    await expect.poll(() => rows.filter({ hasNotText: 'Signed in' }).count()).toBe(5);
    expect(await rows.filter({ hasText: 'Signed in' }).count()).toBeGreaterThan(0);
    expect(await rows.filter({ hasText: 'Operator credit' }).count()).toBe(1);
    expect(await rows.filter({ hasText: `Operator ` }).count()).toBe(1);
    await page.getByText('Before and after').nth(1).click();
    await checked(page, `audit-${size}`);

    await page.getByLabel('Action').selectOption('key');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(() => rows.count()).toBe(3);
    expect(await page.getByRole('link', { name: 'Export CSV' }).getAttribute('href')).toBe(
      '/api/audit/export?action=key&format=csv',
    );
    await checked(page, `audit-filtered-${size}`);
  });

  it('edits billing details on the billing page and links each payment to its receipt', async () => {
    await openNav(page, 'Billing');
    await expect.poll(() => page.getByLabel('Billing name').inputValue()).toBe('Browser Test Industries GmbH');
    const link = page.getByRole('link', { name: /receipt/ });
    expect(await link.getAttribute('href')).toBe(receiptPath);
    await checked(page, `billing-details-${size}`);
  });

  it('prints the receipt with the billing details and the amount', async () => {
    await page.goto(`${harness.gateway.url}${receiptPath}`);
    await page.getByRole('heading', { level: 1, name: 'Receipt' }).waitFor();
    const text = (await page.locator('main').textContent()) ?? '';
    expect(text).toContain('Browser Test Industries GmbH');
    expect(text).toContain('Hauptstraße 1\n10115 Berlin\nGermany');
    expect(text).toMatch(/Amount \(USD\)\s*\$7\.50/);
    await checked(page, `receipt-${size}`);
    await page.emulateMedia({ media: 'print' });
    expect(await page.getByText('Print this page').isVisible()).toBe(false);
    await page.emulateMedia({ media: 'screen' });
  });
});
