import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DashboardClient, PASSWORD, uniqueEmail } from '../helpers/dashboard-client.js';
import { freePort } from '../helpers/free-port.js';
import { startOpenIdProvider, type ProviderUser, type TestOpenIdProvider } from '../helpers/openid-provider.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const CLIENT_ID = 'tollgate-dashboard';
const CLIENT_SECRET = 'a-client-secret-for-the-test-provider';
/** The browser the callback comes from, as the sessions list shows it. */
const BROWSER_AGENT = 'Mozilla/5.0 (X11; Linux x86_64) SsoTestBrowser/1.0';

describe.each([{ database: 'sqlite' }, { database: 'postgres' }])('single sign-on on $database', ({ database }) => {
  let provider: TestOpenIdProvider;
  let harness: TestGateway;
  let subjects = 0;

  beforeAll(async () => {
    // The gateway's port first: the provider registers the client's exact redirect URI.
    const port = await freePort();
    provider = await startOpenIdProvider({
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      redirectUris: [`http://127.0.0.1:${port}/api/auth/sso/acme/callback`],
    });
    harness = await startTestGateway({
      postgres: database === 'postgres',
      env: { PORT: String(port), SSO_ACME_CLIENT_SECRET: CLIENT_SECRET },
      yaml: [
        'ssoProviders:',
        '  - id: acme',
        '    name: Acme Login',
        `    issuer: ${provider.issuer}`,
        `    clientId: ${CLIENT_ID}`,
        // Replaced by SSO_ACME_CLIENT_SECRET from the environment.
        '    clientSecret: placeholder',
        '    allowedDomains: [example.com, sso-only.example]',
        '    requiredForDomains: [sso-only.example]',
        '    roleClaim: groups',
        '    adminValues: [tollgate-admins]',
      ].join('\n'),
    });
  });

  afterAll(async () => {
    await harness?.close();
    await provider?.close();
  });

  const person = (overrides: Partial<ProviderUser> = {}): ProviderUser => ({
    sub: `subject-${++subjects}-${Date.now()}`,
    email: uniqueEmail('sso'),
    email_verified: true,
    name: 'Ada',
    ...overrides,
  });

  /**
   * The browser's round trip: the gateway's start URL, the provider's authorisation endpoint and interaction,
   * back to the gateway's callback. Returns the callback's reply (a redirect) and the dashboard client.
   */
  async function roundTrip(
    user: ProviderUser,
    options: { returnTo?: string; dashboard?: DashboardClient; stateCookie?: (state: string) => string } = {},
  ) {
    const dashboard = options.dashboard ?? new DashboardClient(harness.gateway.url);
    if (dashboard.csrfToken === undefined) await dashboard.open();
    provider.signInAs(user);
    const query = options.returnTo === undefined ? '' : `?returnTo=${encodeURIComponent(options.returnTo)}`;
    const start = await fetch(`${harness.gateway.url}/api/auth/sso/acme/start${query}`, {
      redirect: 'manual',
      headers: { cookie: `tg_session=${dashboard.cookie}` },
    });
    expect(start.status).toBe(302);
    const stateCookie = /tg_sso_state=([^;]+)/.exec(start.headers.getSetCookie().join('\n'))![1]!;
    // Through the provider, keeping its cookies, until it sends the browser back to the gateway.
    const jar = new Map<string, string>();
    let location = start.headers.get('location')!;
    expect(location.startsWith(provider.issuer)).toBe(true);
    for (let hop = 0; hop < 10 && location.startsWith(provider.issuer); hop++) {
      const reply = await fetch(location, {
        redirect: 'manual',
        headers: { cookie: [...jar].map(([name, value]) => `${name}=${value}`).join('; ') },
      });
      for (const line of reply.headers.getSetCookie()) {
        const [pair] = line.split(';');
        const [name, value] = pair!.split('=') as [string, string];
        jar.set(name, value);
      }
      location = new URL(reply.headers.get('location')!, location).href;
    }
    expect(location.startsWith(`${harness.gateway.url}/api/auth/sso/acme/callback?`)).toBe(true);
    const sentState = options.stateCookie?.(stateCookie) ?? stateCookie;
    const callback = await fetch(location, {
      redirect: 'manual',
      headers: { cookie: `tg_session=${dashboard.cookie}; tg_sso_state=${sentState}`, 'user-agent': BROWSER_AGENT },
    });
    for (const line of callback.headers.getSetCookie()) {
      const match = /^tg_session=([^;]*)/.exec(line);
      if (match !== null) dashboard.cookie = match[1];
    }
    return { callback, dashboard, redirectedTo: callback.headers.get('location') ?? '' };
  }

  async function signedInEmail(dashboard: DashboardClient): Promise<string | null> {
    const session = await dashboard.get('/api/session');
    return session.json.account?.email ?? null;
  }

  it('lists the providers for the sign-in page', async () => {
    const reply = await new DashboardClient(harness.gateway.url).get('/api/auth/sso/providers');
    expect(reply.json).toEqual({ providers: [{ id: 'acme', name: 'Acme Login' }] });
  });

  it('provisions a person on first sign-in and signs them in again by subject', async () => {
    const user = person();
    const first = await roundTrip(user, { returnTo: '/keys?tab=all' });
    expect(first.callback.status).toBe(302);
    expect(first.redirectedTo).toBe('/keys?tab=all');
    expect(await signedInEmail(first.dashboard)).toBe(user.email);
    const account = await harness.gateway.accounts.findByEmail(user.email!);
    expect(account.role).toBe('user');
    // The same subject later, even with a changed email at the provider, is the same account.
    const again = await roundTrip({ ...user, email: uniqueEmail('renamed') });
    expect(again.redirectedTo).toBe('/');
    expect(await signedInEmail(again.dashboard)).toBe(user.email);
    await harness.flushLogs();
    expect(harness.logs.some((line) => line.includes('"sso_sign_in"') && line.includes('"provisioned":true'))).toBe(
      true,
    );
  });

  it("lists the session it started, with the device and address, among the account's sessions", async () => {
    const user = person();
    const { dashboard } = await roundTrip(user);
    const listed = await dashboard.get('/api/account/sessions');
    expect(listed.status).toBe(200);
    expect(listed.json.sessions).toHaveLength(1);
    expect(listed.json.sessions[0]).toMatchObject({ current: true, userAgent: BROWSER_AGENT, ip: '127.0.0.1' });
  });

  it('maps the role from the groups claim at each sign-in', async () => {
    const user = person({ groups: ['staff', 'tollgate-admins'] });
    const { dashboard } = await roundTrip(user);
    expect((await dashboard.get('/api/session')).json.account.role).toBe('admin');
    expect((await dashboard.get('/api/admin/accounts')).status).toBe(200);
    const demoted = await roundTrip({ ...user, groups: ['staff'] });
    expect((await demoted.dashboard.get('/api/session')).json.account.role).toBe('user');
  });

  it('links an existing account only when the provider says the email is verified', async () => {
    const email = uniqueEmail('existing');
    await harness.gateway.accounts.create({ email, password: PASSWORD });
    const unverified = await roundTrip(person({ email, email_verified: false }));
    expect(unverified.redirectedTo).toMatch(/^\/login\?sso_error=/);
    expect(decodeURIComponent(unverified.redirectedTo)).toMatch(/does not say the email is verified/);
    expect(await signedInEmail(unverified.dashboard)).toBeNull();
    const verified = await roundTrip(person({ email, email_verified: true }));
    expect(await signedInEmail(verified.dashboard)).toBe(email);
  });

  it('refuses an email domain the provider is not allowed for', async () => {
    const { redirectedTo, dashboard } = await roundTrip(person({ email: 'someone@elsewhere.test' }));
    expect(decodeURIComponent(redirectedTo)).toMatch(/email domain may not sign in/);
    expect(await signedInEmail(dashboard)).toBeNull();
    await expect(harness.gateway.accounts.findByEmail('someone@elsewhere.test')).rejects.toThrow(/No account/);
  });

  it('refuses password sign-in for a domain that must use the provider, naming it', async () => {
    const email = `worker${Date.now()}@sso-only.example`;
    await harness.gateway.accounts.create({ email, password: PASSWORD });
    const dashboard = new DashboardClient(harness.gateway.url);
    const reply = await dashboard.login(email, PASSWORD);
    expect(reply.status).toBe(403);
    expect(reply.json.error.code).toBe('sso_required');
    expect(reply.json.error.message).toMatch(/Acme Login/);
    expect(await signedInEmail(dashboard)).toBeNull();
    const sso = await roundTrip(person({ email, email_verified: true }));
    expect(await signedInEmail(sso.dashboard)).toBe(email);
  });

  it.each([
    ['signature', /signature/i],
    ['nonce', /nonce/i],
    ['audience', /aud/i],
    ['issuer', /iss/i],
  ] as const)('refuses an ID token with a wrong %s, changing nothing', async (how, reason) => {
    const user = person();
    provider.tamperNextIdToken(how);
    const { redirectedTo, dashboard } = await roundTrip(user);
    expect(redirectedTo).toMatch(/^\/login\?sso_error=/);
    const message = decodeURIComponent(redirectedTo);
    expect(message).toMatch(/could not be verified/);
    expect(message).toMatch(reason);
    expect(await signedInEmail(dashboard)).toBeNull();
    await expect(harness.gateway.accounts.findByEmail(user.email!)).rejects.toThrow(/No account/);
    await harness.flushLogs();
    expect(harness.logs.some((line) => line.includes('"sign_in_refused"') && line.includes('token_rejected'))).toBe(
      true,
    );
  });

  it('refuses a callback whose state does not match the browser that started it', async () => {
    const user = person();
    const { redirectedTo, dashboard } = await roundTrip(user, { stateCookie: () => 'x'.repeat(43) });
    expect(decodeURIComponent(redirectedTo)).toMatch(/could not be matched to this browser/);
    expect(await signedInEmail(dashboard)).toBeNull();
    await expect(harness.gateway.accounts.findByEmail(user.email!)).rejects.toThrow(/No account/);
  });

  it.each(['https://evil.example/', '//evil.example/x', '/\\evil.example', 'javascript:alert(1)'])(
    'refuses the return target %s outside the gateway',
    async (returnTo) => {
      const reply = await fetch(
        `${harness.gateway.url}/api/auth/sso/acme/start?returnTo=${encodeURIComponent(returnTo)}`,
        { redirect: 'manual' },
      );
      expect(reply.status).toBe(400);
      expect(((await reply.json()) as { error: unknown }).error).toMatchObject({
        field: 'returnTo',
        message: expect.stringMatching(/this gateway/),
      });
    },
  );

  it('answers 404 for an unknown provider', async () => {
    const reply = await fetch(`${harness.gateway.url}/api/auth/sso/nobody/start`, { redirect: 'manual' });
    expect(reply.status).toBe(404);
  });
});
