import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DESKTOP_VIEWPORT, launchChromium, type BrowserSession } from '../helpers/chromium-browser.js';
import { openNav, screenshot } from '../helpers/dashboard-pages.js';
import { startMailCatcher, type CaughtMail, type MailCatcher } from '../helpers/mail-catcher.js';
import { overflowProblems, allAxeViolations } from '../helpers/page-checks.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';
import { ensureWebBuild } from '../helpers/web-build.js';

/**
 * Verify email, forgot → reset, email change, sessions and account deletion driven in Chromium the way a person
 * does it, with every mail read from a real SMTP server. Each page state is screenshotted and checked by axe-core.
 */

const PASSWORD = 'correct horse battery staple';
const NEW_PASSWORD = 'a password chosen after reset';
const email = `browser-${Date.now()}@example.com`;
const movedEmail = `moved-${Date.now()}@example.com`;

let mail: MailCatcher;
let gateway: TestGateway;
let browser: BrowserSession;
let page: Page;
const pageProblems: string[] = [];

async function inspect(target: Page, name: string): Promise<void> {
  await screenshot(target, `identity-${name}`);
  for (const problem of await overflowProblems(target)) pageProblems.push(`${name}: overflow: ${problem}`);
  for (const violation of await allAxeViolations(target))
    pageProblems.push(
      `${name}: axe ${violation.impact} ${violation.id} (${violation.help}): ${violation.targets.join(' | ')}`,
    );
}

/** The mailed link opened on this gateway (PUBLIC_BASE_URL names another host: only its path and query count). */
async function open(target: Page, caught: CaughtMail): Promise<void> {
  const link = new URL(caught.link!);
  await target.goto(`${gateway.gateway.url}${link.pathname}${link.search}`);
}

beforeAll(async () => {
  await ensureWebBuild();
  mail = await startMailCatcher();
  gateway = await startTestGateway({
    env: { SMTP_URL: mail.url, MAIL_FROM: 'Tollgate <noreply@tollgate.test>', PUBLIC_BASE_URL: 'http://tollgate.test' },
  });
  browser = await launchChromium(DESKTOP_VIEWPORT);
  page = await browser.context.newPage();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await gateway?.close();
  await mail?.close();
});

describe('identity pages in Chromium', { timeout: 120_000 }, () => {
  it('registers, shows the banner until verified, resends and verifies from the mailed link', async () => {
    await page.goto(`${gateway.gateway.url}/register`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    const banner = page.getByRole('region', { name: 'Email verification' });
    await banner.getByText('is not verified yet').waitFor();
    await mail.next(email, 0);
    await banner.getByRole('button', { name: 'Resend the link' }).click();
    await banner.getByText('A new link is on its way.').waitFor();
    await inspect(page, 'banner');
    const second = await mail.next(email, 1);

    await open(page, second);
    await page.getByText(`${email} is verified.`).waitFor();
    await inspect(page, 'verified');
    await page.getByRole('link', { name: 'Go to the dashboard' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    expect(await page.getByRole('region', { name: 'Email verification' }).count()).toBe(0);
  });

  it('lists the sessions and changes the email once the new address confirms it', async () => {
    await openNav(page, 'Settings');
    const sessions = page.getByRole('table').filter({ hasText: 'this session' });
    await sessions.waitFor();
    await page.getByLabel('New email').fill(movedEmail);
    await page.getByRole('region', { name: 'Change email' }).getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Change email' }).click();
    await page.getByText('A link is on its way to the new address.').waitFor();
    await inspect(page, 'settings');
    await open(page, await mail.next(movedEmail, 0));
    await page.getByText(`${movedEmail} is verified.`).waitFor();
  });

  it('resets a forgotten password from the log-in page', async () => {
    await page.goto(`${gateway.gateway.url}/`);
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('heading', { level: 1, name: 'Log in' }).waitFor();
    await page.getByRole('link', { name: 'Forgot password?' }).click();
    await page.getByRole('heading', { level: 1, name: 'Reset your password' }).waitFor();
    await page.getByLabel('Email').fill(movedEmail);
    await page.getByRole('button', { name: 'Send the link' }).click();
    await page.getByText('If an account uses this address').waitFor();
    await inspect(page, 'forgot');

    await open(page, await mail.next(movedEmail, 1));
    await page.getByRole('heading', { level: 1, name: 'Choose a new password' }).waitFor();
    // Long enough for the form, refused by the server: the link stays usable.
    await page.getByLabel('New password', { exact: true }).fill(movedEmail);
    await page.getByLabel('Confirm new password').fill(movedEmail);
    await page.getByRole('button', { name: 'Set password and log in' }).click();
    await page.getByText('The password must not be your email address.').waitFor();
    await inspect(page, 'reset');
    await page.getByLabel('New password', { exact: true }).fill(NEW_PASSWORD);
    await page.getByLabel('Confirm new password').fill(NEW_PASSWORD);
    await page.getByRole('button', { name: 'Set password and log in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  });

  it('deletes the account after the confirm dialog', async () => {
    await openNav(page, 'Settings');
    await page.getByRole('button', { name: 'Delete account…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete your account?' });
    await dialog.getByLabel('Password').fill('not my password');
    await dialog.getByRole('button', { name: 'Delete account' }).click();
    await dialog.getByText('The password is not correct.').waitFor();
    await inspect(page, 'delete-dialog');
    await dialog.getByLabel('Password').fill(NEW_PASSWORD);
    await dialog.getByRole('button', { name: 'Delete account' }).click();
    await page.getByRole('heading', { level: 1, name: 'Log in' }).waitFor();
    expect(await gateway.gateway.storage.accounts.findByEmail(movedEmail)).toBeNull();
  });

  it('has no accessibility problem of any impact nor overflow on any page state', () => {
    expect(pageProblems).toEqual([]);
  });
});
