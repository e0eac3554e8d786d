import type { Page } from 'playwright-core';
import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DESKTOP_VIEWPORT, launchChromium, PHONE_VIEWPORT, type BrowserSession } from '../helpers/chromium-browser.js';
import { DashboardClient, PASSWORD } from '../helpers/dashboard-client.js';
import { logIn, openNav, screenshot } from '../helpers/dashboard-pages.js';
import { join, registeredPerson, type TeamMember } from '../helpers/organisation-team.js';
import { allAxeViolations, overflowProblems } from '../helpers/page-checks.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';
import { ensureWebBuild } from '../helpers/web-build.js';

/**
 * An organisation that requires two-step sign-in, in Chromium: the member without a second factor is told what to
 * do on every page of it, sets up an authenticator app from the prompt, and is let in; the members page shows each
 * member's sign-in state and the owner's requirements. Each state is checked by axe and for clipping on a desktop
 * and a phone.
 */

const STEP_MS = 30_000;
let harness: TestGateway;
let desktop: BrowserSession;
let phone: BrowserSession;
let clock = Math.floor(Date.now() / STEP_MS) * STEP_MS + 1_000;
const problems: string[] = [];
let owner: TeamMember;
let member: TeamMember;
let ownerSecret = '';

function codeAt(secret: string, at: number): string {
  return new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30, algorithm: 'SHA1' }).generate({
    timestamp: at,
  });
}

function tick(ms: number): void {
  clock += ms;
  harness.setClock(clock);
}

async function inspect(page: Page, name: string): Promise<void> {
  await screenshot(page, `sign-in-policy-${name}`);
  for (const problem of await overflowProblems(page)) problems.push(`${name}: overflow: ${problem}`);
  for (const violation of await allAxeViolations(page))
    problems.push(`${name}: axe ${violation.impact} ${violation.id}: ${violation.targets.join(' | ')}`);
}

/** The organisation switcher (in the Menu on a phone), choosing the team. */
async function chooseTeam(page: Page): Promise<void> {
  const menu = page.getByRole('button', { name: 'Menu' });
  if (await menu.isVisible()) await menu.click();
  await page.getByLabel('Organisation', { exact: true }).selectOption({ label: 'Policy Team (developer)' });
}

beforeAll(async () => {
  await ensureWebBuild();
  harness = await startTestGateway({ fakeClockMs: clock });
  owner = await registeredPerson(harness.gateway.url, 'owner');
  const begun = await owner.client.post('/api/security/totp');
  ownerSecret = begun.json.secret;
  expect((await owner.client.post('/api/security/totp/confirm', { code: codeAt(ownerSecret, clock) })).status).toBe(
    200,
  );
  const created = await owner.client.post('/api/organisations', { name: 'Policy Team' });
  const organisationId = created.json.organisation.id as string;
  await owner.client.post('/api/organisations/current', { organisationId });
  member = await registeredPerson(harness.gateway.url, 'member');
  await join(owner.client, member, 'developer');
  const set = await owner.client.call('PUT', '/api/organisation/sign-in-policy', {
    requireSecondFactor: true,
    requiredSsoProviders: [],
  });
  expect(set.status).toBe(200);
  desktop = await launchChromium(DESKTOP_VIEWPORT);
  phone = await launchChromium(PHONE_VIEWPORT);
}, 180_000);

afterAll(async () => {
  await desktop?.close();
  await phone?.close();
  await harness?.close();
});

describe('organisation sign-in requirements in Chromium', { timeout: 120_000 }, () => {
  it('prompts a member without a second factor, on a phone too', async () => {
    const page = await phone.context.newPage();
    await logIn(page, harness.gateway.url, member.email, PASSWORD);
    await chooseTeam(page);
    const prompt = page.getByRole('alert').filter({ hasText: 'Two-step sign-in needed.' });
    await prompt.waitFor();
    await page.getByRole('link', { name: 'Set up two-step sign-in' }).waitFor();
    await inspect(page, 'prompt-phone');
    await page.close();
  });

  it('lets the member set up an authenticator app from the prompt and then reach the organisation', async () => {
    const page = await desktop.context.newPage();
    await logIn(page, harness.gateway.url, member.email, PASSWORD);
    await chooseTeam(page);
    await page.getByRole('alert').filter({ hasText: 'Two-step sign-in needed.' }).waitFor();
    await inspect(page, 'prompt-desktop');
    await page.getByRole('link', { name: 'Set up two-step sign-in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Settings' }).waitFor();
    await page.getByRole('button', { name: 'Set up an authenticator app' }).click();
    await page.getByRole('img', { name: 'QR code for your authenticator app' }).waitFor();
    const secret = (await page.locator('[data-totp-secret]').textContent()) ?? '';
    tick(STEP_MS);
    await page.getByLabel('Code from the app').fill(codeAt(secret, clock));
    await page.getByRole('button', { name: 'Turn on' }).click();
    await page.getByRole('list', { name: 'Recovery codes' }).getByRole('listitem').first().waitFor();

    await openNav(page, 'Members');
    const state = page.getByRole('list', { name: `How ${member.email} signs in` });
    await state.getByText('Two-step: authenticator app').waitFor();
    expect(await page.getByRole('alert').filter({ hasText: 'Two-step sign-in needed.' }).count()).toBe(0);
    await page.getByRole('heading', { name: 'Sign-in requirements' }).waitFor();
    await page.getByText('Members need two-step sign-in.').waitFor();
    await inspect(page, 'members-after-enrolment');
    await page.close();
  });

  it("shows the owner the requirements form and each member's state", async () => {
    const page = await desktop.context.newPage();
    await page.context().clearCookies();
    await page.goto(`${harness.gateway.url}/login`);
    await page.getByLabel('Email').fill(owner.email);
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Two-step sign-in' }).waitFor();
    tick(STEP_MS);
    await page.getByLabel('Code from your authenticator app').fill(codeAt(ownerSecret, clock));
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    await page.getByLabel('Organisation', { exact: true }).selectOption({ label: 'Policy Team (owner)' });
    await openNav(page, 'Members');
    const required = page.getByRole('checkbox', { name: /Require two-step sign-in/ });
    await required.waitFor();
    expect(await required.isChecked()).toBe(true);
    await page.getByRole('button', { name: 'Save requirements' }).click();
    await page.getByText('The sign-in requirements are saved.').waitFor();
    await inspect(page, 'owner-requirements');
    await page.close();
  });

  it('finds no accessibility or clipping problems', () => {
    expect(problems).toEqual([]);
  });
});
