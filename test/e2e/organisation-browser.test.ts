import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DESKTOP_VIEWPORT, launchChromium, PHONE_VIEWPORT, type BrowserSession } from '../helpers/chromium-browser.js';
import { DashboardClient, PASSWORD, uniqueEmail } from '../helpers/dashboard-client.js';
import { logIn, openNav, screenshot } from '../helpers/dashboard-pages.js';
import { allAxeViolations, overflowProblems } from '../helpers/page-checks.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';
import { ensureWebBuild } from '../helpers/web-build.js';

/**
 * Organisations in real Chromium: an owner creates an organisation from the switcher and invites someone from the
 * Members page (no mail: the page shows the link); the invited person opens the link signed out in another
 * browser, logs in, joins, and lands on the Members page of the organisation the switcher now shows. Every state
 * is screenshotted, free of axe violations of any impact, and clips nothing at 1280x800 and 390x844.
 */

let gateway: TestGateway;
let owner: BrowserSession;
let invitee: BrowserSession;
let phone: BrowserSession;
const ownerEmail = uniqueEmail('org-owner');
const inviteeEmail = uniqueEmail('org-invitee');
const problems: string[] = [];

async function inspect(target: Page, name: string): Promise<void> {
  await screenshot(target, name);
  for (const problem of await overflowProblems(target)) problems.push(`${name}: overflow: ${problem}`);
  for (const violation of await allAxeViolations(target))
    problems.push(
      `${name}: axe ${violation.impact} ${violation.id} (${violation.help}): ${violation.targets.join(' | ')}`,
    );
}

beforeAll(async () => {
  await ensureWebBuild();
  gateway = await startTestGateway();
  for (const email of [ownerEmail, inviteeEmail])
    expect((await new DashboardClient(gateway.gateway.url).register(email, PASSWORD)).status).toBe(201);
  owner = await launchChromium(DESKTOP_VIEWPORT);
  invitee = await launchChromium(DESKTOP_VIEWPORT);
  phone = await launchChromium(PHONE_VIEWPORT);
}, 180_000);

afterAll(async () => {
  await Promise.all([owner?.close(), invitee?.close(), phone?.close()]);
  await gateway?.close();
});

describe('organisations in Chromium', { timeout: 120_000 }, () => {
  let link = '';

  it('creates an organisation from the switcher and invites someone from the Members page', async () => {
    const page = await owner.context.newPage();
    await logIn(page, gateway.gateway.url, ownerEmail, PASSWORD);
    await page.getByRole('button', { name: 'New organisation' }).click();
    const dialog = page.getByRole('dialog', { name: 'New organisation' });
    await dialog.getByLabel('Name').fill('Acme Robotics');
    await inspect(page, 'organisation-create-desktop');
    await dialog.getByRole('button', { name: 'Create' }).click();
    await dialog.waitFor({ state: 'hidden' });
    const switcher = page.getByLabel('Organisation', { exact: true });
    await expect.poll(async () => switcher.locator('option:checked').textContent()).toBe('Acme Robotics (owner)');

    await openNav(page, 'Members');
    await page.getByRole('row', { name: new RegExp(`${ownerEmail}.*\\(you\\)`) }).waitFor();
    await page.getByLabel('Email address').fill(inviteeEmail);
    await page.getByLabel('Role', { exact: true }).selectOption('developer');
    await page.getByRole('button', { name: 'Invite' }).click();
    const shown = page.locator('.invite-link code');
    await shown.waitFor();
    link = (await shown.textContent()) ?? '';
    expect(link).toMatch(/\/accept-invitation\?token=[\w-]{43}$/);
    await page.getByText(`${inviteeEmail} · developer`).waitFor();
    await inspect(page, 'organisation-members-invited-desktop');
  });

  it('lets the invited person open the link signed out, log in, join, and see the organisation', async () => {
    const page = await invitee.context.newPage();
    await page.goto(link);
    await page.getByText('Acme Robotics').first().waitFor();
    await page.getByRole('heading', { level: 1, name: 'Join an organisation' }).waitFor();
    await inspect(page, 'organisation-accept-signed-out-desktop');
    await page.getByRole('link', { name: 'Log in' }).click();
    await page.getByLabel('Email').fill(inviteeEmail);
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    const join = page.getByRole('button', { name: 'Join Acme Robotics' });
    await join.waitFor();
    await inspect(page, 'organisation-accept-signed-in-desktop');
    await join.click();
    await page.getByRole('heading', { level: 1, name: 'Members' }).waitFor();
    const switcher = page.getByLabel('Organisation', { exact: true });
    await expect.poll(async () => switcher.locator('option:checked').textContent()).toBe('Acme Robotics (developer)');
    await page.getByRole('row', { name: new RegExp(`${inviteeEmail}.*\\(you\\)`) }).waitFor();
    // A developer may not manage members: no invite form, the reason said.
    expect(await page.getByRole('button', { name: 'Invite' }).count()).toBe(0);
    await page.getByText('does not allow changing members').waitFor();
    await inspect(page, 'organisation-members-developer-desktop');
  });

  it('shows the Members page and the switcher on a phone', async () => {
    const page = await phone.context.newPage();
    await logIn(page, gateway.gateway.url, ownerEmail, PASSWORD);
    // A new session starts in the person's first organisation: switch, from the menu, on the Members page.
    await openNav(page, 'Members');
    await page.getByRole('button', { name: 'Menu' }).click();
    const switcher = page.getByLabel('Organisation', { exact: true });
    await switcher.selectOption({ label: 'Acme Robotics (owner)' });
    await expect.poll(async () => switcher.locator('option:checked').textContent()).toBe('Acme Robotics (owner)');
    await inspect(page, 'organisation-switcher-phone');
    await page.getByRole('button', { name: 'Close' }).click();
    await page.getByRole('row', { name: new RegExp(inviteeEmail) }).waitFor();
    await inspect(page, 'organisation-members-phone');
  });

  it('found no overflow and no axe violation on any page state', () => {
    expect(problems).toEqual([]);
  });
});
