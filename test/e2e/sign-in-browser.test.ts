import { Secret, TOTP } from 'otpauth';
import type { CDPSession, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, type BrowserSession } from '../helpers/chromium-browser.js';
import { logIn, screenshot } from '../helpers/dashboard-pages.js';
import { freePort } from '../helpers/free-port.js';
import { startOpenIdProvider, type TestOpenIdProvider } from '../helpers/openid-provider.js';
import { overflowProblems, allAxeViolations } from '../helpers/page-checks.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';
import { ensureWebBuild } from '../helpers/web-build.js';

/**
 * Two-step sign-in, passkeys and single sign-on driven in the dashboard in real Chromium: an authenticator app set
 * up from the settings page, the second step of a password sign-in, a passkey registered and used through
 * Chromium's virtual authenticator (CDP WebAuthn domain), and "Sign in with <provider>" against a real OpenID
 * provider. The gateway is reached as http://localhost:<port>: WebAuthn needs a domain name, not an IP address.
 */

const PASSWORD = 'correct horse battery staple';
const STEP_MS = 30_000;

let harness: TestGateway;
let provider: TestOpenIdProvider;
let browser: BrowserSession;
let page: Page;
let cdp: CDPSession;
let authenticatorId = '';
let baseUrl = '';
let clock = Math.floor(Date.now() / STEP_MS) * STEP_MS + 1_000;
const email = `browser-2fa-${Date.now()}@example.com`;
let secret = '';
const problems: string[] = [];

function codeAt(at: number): string {
  return new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30, algorithm: 'SHA1' }).generate({
    timestamp: at,
  });
}

function tick(ms: number): void {
  clock += ms;
  harness.setClock(clock);
}

async function inspect(name: string): Promise<void> {
  await screenshot(page, name);
  for (const problem of await overflowProblems(page)) problems.push(`${name}: overflow: ${problem}`);
  for (const violation of await allAxeViolations(page))
    problems.push(`${name}: axe ${violation.impact} ${violation.id}: ${violation.targets.join(' | ')}`);
}

async function signedInEmail(): Promise<string | null> {
  return page.evaluate(async () => {
    const reply = await fetch('/api/session');
    const body = (await reply.json()) as { account: { email: string } | null };
    return body.account?.email ?? null;
  });
}

async function signOut(): Promise<void> {
  await page.context().clearCookies();
  await page.goto(`${baseUrl}/login`);
  await page.getByRole('heading', { level: 1, name: 'Log in' }).waitFor();
}

async function passwordStep(): Promise<void> {
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
  await page.getByRole('button', { name: 'Log in', exact: true }).click();
  await page.getByRole('heading', { level: 1, name: 'Two-step sign-in' }).waitFor();
}

beforeAll(async () => {
  await ensureWebBuild();
  const port = await freePort();
  baseUrl = `http://localhost:${port}`;
  provider = await startOpenIdProvider({
    clientId: 'tollgate-browser',
    clientSecret: 'browser-test-client-secret',
    redirectUris: [`${baseUrl}/api/auth/sso/acme/callback`],
  });
  harness = await startTestGateway({
    fakeClockMs: clock,
    env: { PORT: String(port), PUBLIC_BASE_URL: baseUrl },
    yaml: [
      'ssoProviders:',
      '  - id: acme',
      '    name: Acme Login',
      `    issuer: ${provider.issuer}`,
      '    clientId: tollgate-browser',
      '    clientSecret: browser-test-client-secret',
    ].join('\n'),
  });
  await harness.gateway.accounts.create({ email, password: PASSWORD });
  browser = await launchChromium();
  page = browser.context.pages()[0] ?? (await browser.context.newPage());
  cdp = await browser.context.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  ({ authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  }));
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await harness?.close();
  await provider?.close();
});

describe('sign-in methods in the dashboard', () => {
  it('shows the passkey and provider buttons on the log-in page', async () => {
    await page.goto(`${baseUrl}/login`);
    await page.getByRole('link', { name: 'Sign in with Acme Login' }).waitFor();
    await page.getByRole('button', { name: 'Sign in with a passkey' }).waitFor();
    await inspect('sign-in-login-page');
  });

  it('sets up an authenticator app from the settings page and shows ten recovery codes', async () => {
    await logIn(page, baseUrl, email, PASSWORD);
    await page.goto(`${baseUrl}/settings`);
    await page.getByRole('button', { name: 'Set up an authenticator app' }).click();
    await page.getByRole('img', { name: 'QR code for your authenticator app' }).waitFor();
    secret = (await page.locator('[data-totp-secret]').textContent()) ?? '';
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    await inspect('sign-in-totp-enrolment');
    await page.getByLabel('Code from the app').fill(codeAt(clock));
    await page.getByRole('button', { name: 'Turn on' }).click();
    const codes = page.getByRole('list', { name: 'Recovery codes' }).getByRole('listitem');
    await codes.first().waitFor();
    expect(await codes.count()).toBe(10);
    await page.getByText('Recovery codes left:').waitFor();
    await inspect('sign-in-recovery-codes');
  });

  it('registers, renames and lists a passkey through the virtual authenticator', async () => {
    await page.getByLabel('Passkey name').fill('Laptop');
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    await page.getByRole('button', { name: 'Rename Laptop' }).waitFor();
    page.once('dialog', (dialog) => void dialog.accept('Desk key'));
    await page.getByRole('button', { name: 'Rename Laptop' }).click();
    await page.getByRole('button', { name: 'Remove Desk key' }).waitFor();
    // The authenticator holds one discoverable credential, the one the gateway stored.
    const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
    expect(credentials).toHaveLength(1);
    expect(credentials[0]!.isResidentCredential).toBe(true);
    const stored = await harness.gateway.storage.identityFactors.findPasskey(
      Buffer.from(credentials[0]!.credentialId, 'base64').toString('base64url'),
    );
    expect(stored?.name).toBe('Desk key');
    await inspect('sign-in-passkeys');
  });

  it('asks for the second step after the password, refuses a wrong code and signs in with the right one', async () => {
    await signOut();
    await passwordStep();
    await inspect('sign-in-second-step');
    const right = codeAt(clock);
    // The code used at enrolment is of this very step: a replay.
    await page.getByLabel('Code from your authenticator app').fill(right);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByText('This code was used already').waitFor();
    expect(await signedInEmail()).toBeNull();
    tick(STEP_MS);
    await page.getByLabel('Code from your authenticator app').fill(codeAt(clock));
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    expect(await signedInEmail()).toBe(email);
  });

  it('signs in with the passkey alone, no email or password typed', async () => {
    await signOut();
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    expect(await signedInEmail()).toBe(email);
    // The session the passkey started is in the sessions list with this browser and its address.
    const sessions = await page.evaluate(async () => {
      const reply = await fetch('/api/account/sessions');
      return ((await reply.json()) as { sessions: Array<{ current: boolean; userAgent: string | null; ip: string }> })
        .sessions;
    });
    const current = sessions.find((session) => session.current);
    expect(current?.userAgent).toContain('Chrome');
    expect(current?.ip).toBe('127.0.0.1');
  });

  it('refuses a passkey assertion whose signature was altered on the way', async () => {
    await signOut();
    await page.route('**/api/auth/passkey', async (route) => {
      const body = JSON.parse(route.request().postData() ?? '{}') as { response: { response: { signature: string } } };
      const signature = Buffer.from(body.response.response.signature, 'base64url');
      signature[signature.length >> 1]! ^= 0x01;
      body.response.response.signature = signature.toString('base64url');
      await route.continue({ postData: JSON.stringify(body) });
    });
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await page.getByRole('alert').filter({ hasText: 'The passkey was not accepted' }).waitFor();
    await page.unroute('**/api/auth/passkey');
    expect(await signedInEmail()).toBeNull();
    await harness.flushLogs();
    expect(harness.logs.some((line) => line.includes('"sign_in_refused"') && line.includes('passkey_refused'))).toBe(
      true,
    );
  });

  it('takes the passkey as the second step after the password', async () => {
    await signOut();
    await passwordStep();
    await page.getByRole('button', { name: 'Use a passkey' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    expect(await signedInEmail()).toBe(email);
  });

  it('signs in with the provider and provisions the person', async () => {
    await signOut();
    const ssoEmail = `browser-sso-${Date.now()}@example.com`;
    provider.signInAs({ sub: `browser-${Date.now()}`, email: ssoEmail, email_verified: true });
    await page.getByRole('link', { name: 'Sign in with Acme Login' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    expect(await signedInEmail()).toBe(ssoEmail);
  });

  it('shows a refused single sign-on on the log-in page', async () => {
    await signOut();
    provider.signInAs({ sub: `browser-bad-${Date.now()}`, email: `bad-${Date.now()}@example.com` });
    provider.tamperNextIdToken('nonce');
    await page.getByRole('link', { name: 'Sign in with Acme Login' }).click();
    await page.getByRole('alert').filter({ hasText: 'could not be verified' }).waitFor();
    expect(await signedInEmail()).toBeNull();
    await inspect('sign-in-sso-refused');
  });

  it('removes the passkey', async () => {
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    await page.goto(`${baseUrl}/settings`);
    await page.getByRole('button', { name: 'Remove Desk key' }).click();
    await page.getByRole('button', { name: 'Remove Desk key' }).waitFor({ state: 'detached' });
    const account = await harness.gateway.accounts.findByEmail(email);
    expect(await harness.gateway.storage.identityFactors.listPasskeys(account.id)).toEqual([]);
  });

  it('deletes the account with its authenticator app, recovery codes, passkey and SSO link', async () => {
    const factors = harness.gateway.storage.identityFactors;
    const account = await harness.gateway.accounts.findByEmail(email);
    await page.getByLabel('Passkey name').fill('Spare key');
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    await page.getByRole('button', { name: 'Remove Spare key' }).waitFor();
    // The provider asserts the same, verified address: the account is linked to its subject.
    await signOut();
    const subject = `browser-linked-${Date.now()}`;
    provider.signInAs({ sub: subject, email, email_verified: true });
    await page.getByRole('link', { name: 'Sign in with Acme Login' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    expect(await factors.findSsoAccount('acme', subject)).toBe(account.id);
    expect((await factors.findTotp(account.id))?.confirmedAt).not.toBeNull();
    expect(await factors.countUnusedRecoveryCodes(account.id)).toBe(10);
    expect(await factors.listPasskeys(account.id)).toHaveLength(1);

    await page.goto(`${baseUrl}/settings`);
    await page.getByRole('button', { name: 'Delete account…' }).click();
    await page.getByRole('dialog').getByLabel('Password').fill(PASSWORD);
    await page.getByRole('dialog').getByRole('button', { name: 'Delete account' }).click();
    await page.getByRole('heading', { level: 1, name: 'Log in' }).waitFor();
    expect(await factors.findTotp(account.id)).toBeNull();
    expect(await factors.countUnusedRecoveryCodes(account.id)).toBe(0);
    expect(await factors.listPasskeys(account.id)).toEqual([]);
    expect(await factors.findSsoAccount('acme', subject)).toBeNull();

    // The authenticator still holds the credential, but the gateway no longer knows it.
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await page.getByRole('alert').filter({ hasText: 'The passkey was not accepted' }).waitFor();
    expect(await signedInEmail()).toBeNull();
    // The provider's subject is no longer the deleted account's: it provisions a new one under the freed address.
    await signOut();
    provider.signInAs({ sub: subject, email, email_verified: true });
    await page.getByRole('link', { name: 'Sign in with Acme Login' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    expect(await signedInEmail()).toBe(email);
    const fresh = await factors.findSsoAccount('acme', subject);
    expect(fresh).not.toBeNull();
    expect(fresh).not.toBe(account.id);
  });

  it('left every page state without overflow or accessibility violations of any impact', () => {
    expect(problems).toEqual([]);
  });
});
