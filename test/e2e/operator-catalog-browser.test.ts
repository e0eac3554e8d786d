import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DESKTOP_VIEWPORT, launchChromium, PHONE_VIEWPORT, type BrowserSession } from '../helpers/chromium-browser.js';
import { PASSWORD, uniqueEmail } from '../helpers/dashboard-client.js';
import { logIn, openNav, screenshot } from '../helpers/dashboard-pages.js';
import { allAxeViolations, overflowProblems } from '../helpers/page-checks.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';
import { ensureWebBuild } from '../helpers/web-build.js';

/**
 * The operator view's catalog in real Chromium, at 1280x800 and 390x844: an alias added through the form is
 * listed and served; a bad entry shows the gateway's message naming the field, nothing stored; a model retired
 * from the table shows as retired. Every state is axe clean and clips nothing.
 */

let harness: TestGateway;
let operatorEmail: string;

beforeAll(async () => {
  await ensureWebBuild();
  harness = await startTestGateway({ vendors: ['anthropic'] });
  operatorEmail = uniqueEmail('catalog-operator');
  await harness.gateway.accounts.create({ email: operatorEmail, password: PASSWORD, role: 'admin' });
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
])('the operator catalog on a $size screen', ({ size, viewport }) => {
  let browser: BrowserSession;
  let page: Page;

  beforeAll(async () => {
    browser = await launchChromium(viewport);
    page = await browser.context.newPage();
    await logIn(page, harness.gateway.url, operatorEmail, PASSWORD);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
  });

  it('adds an alias, refuses a bad entry naming its field, and retires a model', async () => {
    await openNav(page, 'Operator');
    const catalog = page.getByRole('region', { name: 'Catalog models, scrollable' });
    await expect.poll(() => catalog.locator('tbody tr').count()).toBeGreaterThan(10);
    await checked(page, `catalog-${size}`);

    const alias = `sonnet-${size}`;
    await page.getByLabel('Kind').selectOption('aliases');
    await page.getByLabel('Name', { exact: true }).fill(alias);
    await page.getByLabel('Entry (JSON, as tollgate.yaml holds it)').fill('{"model": "alpha-sonnet-5"}');
    await page.getByRole('button', { name: 'Check and save' }).click();
    await expect.poll(() => page.getByText(`Saved aliases.${alias}`).count()).toBe(1);
    expect(await page.locator('.catalog-list li', { hasText: alias }).count()).toBe(1);

    await page.getByLabel('Kind').selectOption('models');
    await page.getByLabel('Name', { exact: true }).fill(`alpha-bad-${size}`);
    await page
      .getByLabel('Entry (JSON, as tollgate.yaml holds it)')
      .fill(
        '{"family": "alpha", "contextWindow": 1000, "maxOutputTokens": 100, "prices": {"input": "two", "output": "1"}}',
      );
    await page.getByRole('button', { name: 'Check and save' }).click();
    const refusal = page.getByRole('alert').filter({ hasText: `models.alpha-bad-${size}.prices.input` });
    await expect.poll(() => refusal.count()).toBe(1);
    expect(await page.getByLabel('Entry (JSON, as tollgate.yaml holds it)').getAttribute('aria-invalid')).toBe('true');
    await checked(page, `catalog-refused-${size}`);
    expect(
      (await harness.gateway.storage.catalog.snapshot()).entries.some((entry) => entry.id === `alpha-bad-${size}`),
    ).toBe(false);

    const retiring = size === 'desktop' ? 'alpha-haiku-4-5' : 'alpha-opus-4-8';
    page.once('dialog', (dialog) => void dialog.accept('alpha-sonnet-5'));
    await page.getByRole('button', { name: `Retire ${retiring}` }).click();
    const row = catalog.locator('tbody tr', { hasText: retiring });
    await expect.poll(() => row.textContent()).toContain('retired → alpha-sonnet-5');
    await checked(page, `catalog-retired-${size}`);
  });
});
