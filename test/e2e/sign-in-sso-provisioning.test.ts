import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DashboardClient, uniqueEmail } from '../helpers/dashboard-client.js';
import { freePort } from '../helpers/free-port.js';
import { startOpenIdProvider, type ProviderUser, type TestOpenIdProvider } from '../helpers/openid-provider.js';
import { registeredPerson } from '../helpers/organisation-team.js';
import { ssoRoundTrip } from '../helpers/sso-round-trip.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const CLIENT_ID = 'tollgate-dashboard';
const CLIENT_SECRET = 'a-client-secret-for-the-test-provider';
const AGENT = 'Mozilla/5.0 (X11; Linux x86_64) SsoProvisioningBrowser/1.0';

/**
 * SSO provisioning into an organisation with roles from a claim, an organisation that requires SSO, and refused ID
 * tokens in the organisation's audit log: the shipped gateway and a real OpenID provider on loopback, both databases.
 */
describe.each([{ database: 'sqlite' }, { database: 'postgres' }])('SSO provisioning on $database', ({ database }) => {
  let provider: TestOpenIdProvider;
  let harness: TestGateway;
  let subjects = 0;
  // Named in the configuration before it exists: made once the gateway runs, before anyone signs in.
  const organisationId = `org_${randomUUID().replaceAll('-', '')}`;

  beforeAll(async () => {
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
        '    clientSecret: placeholder',
        '    provisioning:',
        `      organisation: ${organisationId}`,
        '      roleClaim: groups',
        '      roles: { tg-owners: owner, tg-admins: admin, tg-viewers: viewer }',
      ].join('\n'),
    });
    const founder = await registeredPerson(harness.gateway.url, 'founder');
    await harness.gateway.storage.organisations.create(
      { id: organisationId, name: 'Acme Team', billingName: null, billingAddress: null, createdAt: Date.now() },
      founder.accountId,
    );
  });

  afterAll(async () => {
    await harness?.close();
    await provider?.close();
  });

  const person = (groups: string[]): ProviderUser => ({
    sub: `subject-${++subjects}-${Date.now()}`,
    email: uniqueEmail('sso'),
    email_verified: true,
    groups,
  });
  const signIn = (user: ProviderUser, dashboard?: DashboardClient) =>
    ssoRoundTrip(harness.gateway.url, provider, 'acme', user, {
      userAgent: AGENT,
      ...(dashboard === undefined ? {} : { dashboard }),
    });
  const roleIn = async (accountId: string) =>
    (await harness.gateway.storage.organisations.membership(organisationId, accountId))?.role ?? null;

  it('provisions on first sign-in with the mapped role, works in that organisation, and follows the claim', async () => {
    const user = person(['tg-admins', 'unrelated']);
    const first = await signIn(user);
    expect(first.redirectedTo).toBe('/');
    const account = await harness.gateway.accounts.findByEmail(user.email!);
    expect(await roleIn(account.id)).toBe('admin');
    const current = await first.dashboard.get('/api/organisation');
    expect(current.json.organisation).toMatchObject({ id: organisationId, role: 'admin' });

    // The claim changes at the provider: the role follows at the next sign-in, both ways.
    expect((await signIn({ ...user, groups: ['tg-viewers'] })).redirectedTo).toBe('/');
    expect(await roleIn(account.id)).toBe('viewer');
    expect((await signIn({ ...user, groups: [] })).redirectedTo).toBe('/');
    expect(await roleIn(account.id)).toBe('developer');

    const owner = await signIn(person(['tg-owners']));
    const audit = await owner.dashboard.get('/api/audit?limit=200');
    const about = audit.json.events.filter(
      (event: { target: { id: string } | null }) => event.target?.id === account.id,
    );
    const actions = about.map((event: { action: string }) => event.action);
    expect(actions).toEqual(expect.arrayContaining(['member.provision', 'member.role', 'sign_in.success']));
    const provisioned = about.find((event: { action: string }) => event.action === 'member.provision');
    expect(provisioned).toMatchObject({ actor: { type: 'system', id: 'sso:acme' }, after: { role: 'admin' } });
    const success = about.find((event: { action: string }) => event.action === 'sign_in.success');
    expect(success).toMatchObject({ ip: '127.0.0.1', after: { method: 'sso', provider: 'acme', userAgent: AGENT } });
  });

  it('leaves the role of a member who joined otherwise alone', async () => {
    // A person who joined by hand (here: as billing) and then signs in through the provider with the same
    // verified email keeps the role they were given.
    const member = await registeredPerson(harness.gateway.url, 'by-hand');
    await harness.gateway.storage.organisations.provisionMember(
      organisationId,
      member.accountId,
      'billing',
      'manual',
      1,
    );
    const { redirectedTo } = await signIn({ ...person(['tg-admins']), email: member.email });
    expect(redirectedTo).toBe('/');
    expect(await roleIn(member.accountId)).toBe('billing');
  });

  it.each(['signature', 'nonce'] as const)(
    'refuses an ID token with a wrong %s and records it in the organisation',
    async (how) => {
      const user = person(['tg-admins']);
      provider.tamperNextIdToken(how);
      const { redirectedTo, dashboard } = await signIn(user);
      expect(redirectedTo).toMatch(/^\/login\?sso_error=/);
      expect((await dashboard.get('/api/session')).json.account).toBeNull();
      await expect(harness.gateway.accounts.findByEmail(user.email!)).rejects.toThrow(/No account/);
      const owner = await signIn(person(['tg-owners']));
      const audit = await owner.dashboard.get('/api/audit?action=sign_in.failure&limit=200');
      const refused = audit.json.events.find(
        (event: { after: { reason: string } }) => event.after.reason === `token_rejected:${how}`,
      );
      expect(refused).toMatchObject({
        actor: { type: 'system', id: 'sso:acme' },
        ip: '127.0.0.1',
        after: { method: 'sso', provider: 'acme', userAgent: AGENT },
      });
    },
  );

  it('lets an owner require SSO: password sessions of members are refused, SSO ones served', async () => {
    const founder = await registeredPerson(harness.gateway.url, 'password-owner');
    await harness.gateway.storage.organisations.provisionMember(
      organisationId,
      founder.accountId,
      'owner',
      'manual',
      1,
    );
    expect((await founder.client.post('/api/organisations/current', { organisationId })).status).toBe(200);
    const policy = { requireSecondFactor: false, requiredSsoProviders: ['acme'] };
    // Its own password session would be shut out: refused.
    const refused = await founder.client.call('PUT', '/api/organisation/sign-in-policy', policy);
    expect(refused.status).toBe(400);
    expect(refused.json.error.code).toBe('sso_session_needed');
    const unknown = await founder.client.call('PUT', '/api/organisation/sign-in-policy', {
      ...policy,
      requiredSsoProviders: ['nope'],
    });
    expect(unknown.status).toBe(400);

    const ssoOwner = await signIn(person(['tg-owners']));
    const set = await ssoOwner.dashboard.call('PUT', '/api/organisation/sign-in-policy', policy);
    expect(set.status).toBe(200);
    const shutOut = await founder.client.get('/api/organisation');
    expect(shutOut.status).toBe(403);
    expect(shutOut.json.error.code).toBe('sso_required_by_organisation');
    expect(shutOut.json.error.message).toContain('"Sign in with Acme Login"');
    expect((await ssoOwner.dashboard.get('/api/keys')).status).toBe(200);
    // Back to no requirement, so the other tests' sessions are not affected by the order they run in.
    expect(
      (
        await ssoOwner.dashboard.call('PUT', '/api/organisation/sign-in-policy', {
          requireSecondFactor: false,
          requiredSsoProviders: [],
        })
      ).status,
    ).toBe(200);
    expect((await founder.client.get('/api/organisation')).status).toBe(200);
  });
});
