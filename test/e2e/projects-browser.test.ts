import { readFile } from 'node:fs/promises';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DESKTOP_VIEWPORT, launchChromium, PHONE_VIEWPORT, type BrowserSession } from '../helpers/chromium-browser.js';
import { DashboardClient, PASSWORD, uniqueEmail } from '../helpers/dashboard-client.js';
import { createKey, logIn, openNav, screenshot } from '../helpers/dashboard-pages.js';
import { allAxeViolations, overflowProblems } from '../helpers/page-checks.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';
import { ensureWebBuild } from '../helpers/web-build.js';

/**
 * Projects in real Chromium: an owner creates a project with a model allowlist, renames and narrows it, creates a
 * key in it from the API keys page (which shows the key's project), sees its usage with the Usage page's project
 * filter, and archives it. Every state is screenshotted, free of axe violations of any impact, and clips nothing
 * at 1280x800 and 390x844.
 */

let gateway: TestGateway;
let desktop: BrowserSession;
let phone: BrowserSession;
const ownerEmail = uniqueEmail('projects-owner');
const problems: string[] = [];

async function inspect(target: Page, name: string): Promise<void> {
  await screenshot(target, name);
  for (const problem of await overflowProblems(target)) problems.push(`${name}: overflow: ${problem}`);
  for (const violation of await allAxeViolations(target))
    problems.push(
      `${name}: axe ${violation.impact} ${violation.id} (${violation.help}): ${violation.targets.join(' | ')}`,
    );
}

/** Clicks a download link and reads the file the browser saved. */
async function downloaded(target: Page, linkName: string): Promise<{ name: string; text: string }> {
  const download = target.waitForEvent('download');
  await target.getByRole('link', { name: linkName }).click();
  const file = await download;
  return { name: file.suggestedFilename(), text: await readFile(await file.path(), 'utf8') };
}

beforeAll(async () => {
  await ensureWebBuild();
  gateway = await startTestGateway();
  expect((await new DashboardClient(gateway.gateway.url).register(ownerEmail, PASSWORD)).status).toBe(201);
  desktop = await launchChromium(DESKTOP_VIEWPORT);
  phone = await launchChromium(PHONE_VIEWPORT);
}, 180_000);

afterAll(async () => {
  await Promise.all([desktop?.close(), phone?.close()]);
  await gateway?.close();
});

describe('projects in Chromium', { timeout: 120_000 }, () => {
  it('creates, edits and uses a project, filters usage by it, and archives it', async () => {
    const page = await desktop.context.newPage();
    await logIn(page, gateway.gateway.url, ownerEmail, PASSWORD);
    await openNav(page, 'Projects');
    await page.getByRole('row', { name: /Default/ }).waitFor();
    await page.getByLabel('Name', { exact: true }).fill('Mobile app');
    await page.getByLabel('Models allowed').fill('gamma');
    await page.getByRole('button', { name: 'Create project' }).click();
    await page.getByText('Project “Mobile app” was created').waitFor();
    await page.getByRole('row', { name: /Mobile app.*gamma/ }).waitFor();
    await inspect(page, 'projects-created-desktop');

    await page.getByRole('button', { name: 'Edit Mobile app' }).click();
    const dialog = page.getByRole('dialog', { name: 'Edit “Mobile app”' });
    await dialog.getByLabel('Name').fill('Mobile');
    await dialog.getByLabel('Models allowed').fill('gamma, beta-5.4');
    await inspect(page, 'projects-edit-desktop');
    await dialog.getByRole('button', { name: 'Save changes' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await page.getByRole('row', { name: /Mobile.*gamma, beta-5\.4/ }).waitFor();

    // A key in the project, from the API keys page; its row names the project.
    await openNav(page, 'API keys');
    await page.getByLabel('Project', { exact: true }).selectOption({ label: 'Mobile' });
    const secret = await createKey(page, 'mobile key');
    await page.getByRole('row', { name: /mobile key.*Mobile/ }).waitFor();
    await inspect(page, 'projects-keys-desktop');

    // The project's allowlist binds the key: an allowed model answers, another is refused.
    const call = (model: string, key = secret) =>
      fetch(`${gateway.gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi [[sim words=3]]' }] }),
      });
    expect((await call('beta-5.4')).status).toBe(200);
    expect((await call('alpha-sonnet-5')).status).toBe(403);
    // A request outside the project, which its usage and exports must leave out.
    await page.getByLabel('Project', { exact: true }).selectOption({ label: 'Default' });
    const defaultSecret = await createKey(page, 'default key');
    expect((await call('gamma-3.5-flash', defaultSecret)).status).toBe(200);

    await openNav(page, 'Usage');
    await page.getByLabel('Project', { exact: true }).selectOption({ label: 'Mobile' });
    await page
      .getByRole('table', { name: 'Usage by project' })
      .getByRole('row', { name: /Mobile/ })
      .waitFor();
    await page
      .getByRole('table', { name: 'Usage by key' })
      .getByRole('row', { name: /mobile key/ })
      .waitFor();
    expect(page.url()).toContain('project=');
    // Every request of the days chosen, as one download, with the project filter: the Mobile key's only.
    await page.getByLabel('Format').selectOption('json');
    await inspect(page, 'projects-usage-desktop');
    const records = await downloaded(page, 'Download requests');
    expect(records.name).toMatch(/^tollgate-usage-\d{4}-\d{2}-\d{2}-to-\d{4}-\d{2}-\d{2}\.ndjson$/);
    expect(
      records.text
        .trim()
        .split('\n')
        .map((line) => (JSON.parse(line) as { model: string }).model),
    ).toEqual(['beta-5.4']);
    // The transactions of any days, from the Billing page.
    await openNav(page, 'Billing');
    const ledger = await downloaded(page, 'Download transactions');
    expect(ledger.text.split('\r\n')[0]).toMatch(/^id,created_at,kind,amount_usd,/);

    await openNav(page, 'Projects');
    await page.getByRole('button', { name: 'Archive Mobile' }).click();
    const confirm = page.getByRole('dialog', { name: 'Archive this project?' });
    await confirm.getByText('its 1 active keys stop working').waitFor();
    await inspect(page, 'projects-archive-confirm-desktop');
    await confirm.getByRole('button', { name: 'Archive project' }).click();
    await page.getByText('Project “Mobile” was archived').waitFor();
    await page.getByText('Archived projects (1)').click();
    await page
      .getByRole('table', { name: 'Archived projects' })
      .getByRole('row', { name: /Mobile.*archived/ })
      .waitFor();
    await inspect(page, 'projects-archived-desktop');
    expect((await call('beta-5.4')).status).toBe(401);
  });

  it('shows the Projects, API keys and Usage pages on a phone', async () => {
    const page = await phone.context.newPage();
    await logIn(page, gateway.gateway.url, ownerEmail, PASSWORD);
    await openNav(page, 'Projects');
    await page.getByRole('row', { name: /Default/ }).waitFor();
    await inspect(page, 'projects-phone');
    await openNav(page, 'API keys');
    await page
      .getByRole('row', { name: /mobile key/ })
      .first()
      .waitFor();
    await inspect(page, 'projects-keys-phone');
    await openNav(page, 'Usage');
    await page.getByRole('table', { name: 'Usage by project' }).waitFor();
    await inspect(page, 'projects-usage-phone');
  });

  it('found no overflow and no axe violation on any page state', () => {
    expect(problems).toEqual([]);
  });
});
