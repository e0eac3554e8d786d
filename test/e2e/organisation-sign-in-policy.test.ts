import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../../src/accounts/session-service.js';
import { AccountLinks } from '../../src/identity/account-links.js';
import { DashboardClient, PASSWORD } from '../helpers/dashboard-client.js';
import { join, registeredPerson, type TeamMember } from '../helpers/organisation-team.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const STEP_MS = 30_000;
const AGENT = 'Mozilla/5.0 (X11; Linux x86_64) PolicyTestBrowser/1.0';

function codeAt(secret: string, at: number): string {
  return new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30, algorithm: 'SHA1' }).generate({
    timestamp: at,
  });
}

/**
 * An organisation that requires a second factor, through the shipped gateway on both databases: who is refused
 * and with what, enrolment letting the person in, sign-in attempts in the audit log, and removal ending access
 * and the person's keys at once.
 */
describe.each([{ database: 'sqlite' }, { database: 'postgres' }])(
  'organisation sign-in policy on $database',
  ({ database }) => {
    let harness: TestGateway;
    // A still clock the test moves: TOTP steps are the test's to choose.
    let clock = Math.floor(Date.now() / STEP_MS) * STEP_MS + 1_000;
    const tick = (ms: number) => {
      clock += ms;
      harness.setClock(clock);
    };

    beforeAll(async () => {
      harness = await startTestGateway({ postgres: database === 'postgres', fakeClockMs: clock });
    });

    afterAll(async () => {
      await harness?.close();
    });

    /** Sends a browser's User-Agent on every call, as the audit log records it. */
    function withAgent(person: TeamMember): TeamMember {
      const call = person.client.call.bind(person.client);
      person.client.call = (method, path, body, options = {}) =>
        call(method, path, body, { ...options, headers: { 'user-agent': AGENT, ...options.headers } });
      return person;
    }

    async function enrolTotp(client: DashboardClient): Promise<string> {
      const begun = await client.post('/api/security/totp');
      expect(begun.status).toBe(200);
      const secret: string = begun.json.secret;
      expect((await client.post('/api/security/totp/confirm', { code: codeAt(secret, clock) })).status).toBe(200);
      return secret;
    }

    /** A password sign-in finished with the code of the next TOTP step, on a new client. */
    async function signInWithCode(email: string, secret: string): Promise<DashboardClient> {
      const client = new DashboardClient(harness.gateway.url);
      await client.open();
      const first = await client.post('/api/auth/login', { email, password: PASSWORD });
      expect(first.json.secondFactor.methods).toContain('totp');
      tick(STEP_MS);
      const second = await client.post('/api/auth/second-factor', {
        token: first.json.secondFactor.token,
        code: codeAt(secret, clock),
      });
      expect(second.status).toBe(200);
      client.csrfToken = second.json.csrfToken;
      return client;
    }

    async function teamWith(memberRole: 'developer' | 'admin') {
      const owner = withAgent(await registeredPerson(harness.gateway.url, 'owner'));
      const created = await owner.client.post('/api/organisations', { name: 'Policy Team' });
      const organisationId = created.json.organisation.id as string;
      expect((await owner.client.post('/api/organisations/current', { organisationId })).status).toBe(200);
      const member = withAgent(await registeredPerson(harness.gateway.url, 'member'));
      await join(owner.client, member, memberRole);
      return { owner, member, organisationId };
    }

    it('refuses members without a second factor until they enrol, and password-only sessions', async () => {
      const { owner, member, organisationId } = await teamWith('developer');
      const putPolicy = (client: DashboardClient, body: unknown) =>
        client.call('PUT', '/api/organisation/sign-in-policy', body);
      // The owner must have a second factor, used by this session, to turn it on.
      const early = await putPolicy(owner.client, {
        requireSecondFactor: true,
        requiredSsoProviders: [],
      });
      expect(early.status).toBe(400);
      expect(early.json.error.code).toBe('second_factor_needed');
      const bad = await putPolicy(owner.client, {
        requireSecondFactor: 'yes',
        requiredSsoProviders: [],
      });
      expect(bad.status).toBe(400);
      const ownerSecret = await enrolTotp(owner.client);
      const set = await putPolicy(owner.client, {
        requireSecondFactor: true,
        requiredSsoProviders: [],
      });
      expect(set.status).toBe(200);
      expect(set.json.policy).toEqual({ requireSecondFactor: true, requiredSsoProviders: [] });
      // Only an owner changes it.
      const byMember = await putPolicy(member.client, { requireSecondFactor: false, requiredSsoProviders: [] });
      expect(byMember.status).toBe(403);
      expect(byMember.json.error.code).toBe('second_factor_enrolment_required');

      // The member, signed in with a password and no factor: refused the organisation's pages, keys and API.
      for (const path of ['/api/organisation', '/api/keys', '/api/organisation/members', '/api/overview']) {
        const refused = await member.client.get(path);
        expect(refused.status, path).toBe(403);
        expect(refused.json.error.code).toBe('second_factor_enrolment_required');
        expect(refused.json.error.message).toMatch(/authenticator app or a passkey/);
      }
      const keyRefused = await member.client.post('/api/keys', { name: 'blocked' });
      expect(keyRefused.status).toBe(403);
      // Their own security settings stay open, so they can enrol.
      expect((await member.client.get('/api/security')).status).toBe(200);
      const otherSession = new DashboardClient(harness.gateway.url);
      expect((await otherSession.login(member.email, PASSWORD)).status).toBe(200);

      const memberSecret = await enrolTotp(member.client);
      // Proved in this session: it counts as two-step now; the other session ended with the change.
      expect((await member.client.get('/api/organisation')).status).toBe(200);
      expect((await otherSession.get('/api/organisation')).status).toBe(401);
      const members = await owner.client.get('/api/organisation/members');
      const listed = members.json.members.find((entry: { accountId: string }) => entry.accountId === member.accountId);
      expect(listed.signIn).toEqual({ totp: true, passkeys: 0, ssoProviders: [], secondFactor: true });

      // A two-step sign-in reaches it; the same session as a password alone (as every session from before the
      // policy existed reads) is refused with its own code.
      const twoStep = await signInWithCode(member.email, memberSecret);
      expect((await twoStep.post('/api/organisations/current', { organisationId })).status).toBe(200);
      expect((await twoStep.get('/api/organisation')).status).toBe(200);
      await harness.gateway.storage.sessions.setSignInMethod(hashToken(twoStep.cookie!), 'password');
      const passwordOnly = await twoStep.get('/api/organisation');
      expect(passwordOnly.status).toBe(403);
      expect(passwordOnly.json.error.code).toBe('second_factor_session_required');

      // Wrong and replayed codes are refused and audited, with the address and browser, never the code.
      const client = new DashboardClient(harness.gateway.url);
      await client.open();
      const call = client.call.bind(client);
      client.call = (method, path, body, options = {}) =>
        call(method, path, body, { ...options, headers: { 'user-agent': AGENT, ...options.headers } });
      const pending = await client.post('/api/auth/login', { email: member.email, password: PASSWORD });
      const usedCode = codeAt(memberSecret, clock);
      const replayed = await client.post('/api/auth/second-factor', {
        token: pending.json.secondFactor.token,
        code: usedCode,
      });
      expect(replayed.status).toBe(401);
      const wrong = await client.post('/api/auth/second-factor', {
        token: pending.json.secondFactor.token,
        code: String((Number(usedCode) + 1) % 1_000_000).padStart(6, '0'),
      });
      expect(wrong.status).toBe(401);
      const wrongPassword = await client.post('/api/auth/login', { email: member.email, password: 'not the password' });
      expect(wrongPassword.status).toBe(401);

      const ownerTwoStep = await signInWithCode(owner.email, ownerSecret);
      expect((await ownerTwoStep.post('/api/organisations/current', { organisationId })).status).toBe(200);
      const audit = await ownerTwoStep.get('/api/audit?action=sign_in&limit=200');
      expect(audit.status).toBe(200);
      const mine = audit.json.events.filter((event: { actor: { id: string } }) => event.actor.id === member.accountId);
      const reasons = mine.map((event: { action: string; after: { reason?: string } }) =>
        event.action === 'sign_in.success' ? 'success' : event.after.reason,
      );
      expect(reasons).toEqual(
        expect.arrayContaining(['success', 'replayed_code', 'wrong_code', 'invalid_credentials']),
      );
      const failure = mine.find((event: { after: { reason?: string } }) => event.after.reason === 'wrong_code');
      expect(failure).toMatchObject({
        ip: '127.0.0.1',
        action: 'sign_in.failure',
        after: { method: 'second_factor', userAgent: AGENT },
      });
      expect(audit.text).not.toContain(PASSWORD);
      expect(audit.text).not.toContain(usedCode);
      expect(audit.text).not.toContain(memberSecret);
    });

    it('records a password reset by link, and the same link refused when used again', async () => {
      const { owner, member } = await teamWith('developer');
      const links = new AccountLinks(harness.gateway.storage.identity, () => clock);
      const token = await links.issue('reset_password', member.accountId, member.email);
      const client = new DashboardClient(harness.gateway.url);
      await client.open();
      const newPassword = 'a new password after the reset link';
      const reset = await client.post('/api/auth/reset-password', { token, newPassword });
      expect(reset.status).toBe(200);
      const again = await client.post('/api/auth/reset-password', { token, newPassword });
      expect(again.status).toBe(400);
      expect(again.json.error.code).toBe('link_used');
      const audit = await owner.client.get('/api/audit?action=sign_in&limit=50');
      const mine = audit.json.events
        .filter((event: { actor: { id: string } }) => event.actor.id === member.accountId)
        .map((event: { action: string; after: { method: string; reason?: string } }) => [
          event.action,
          event.after.method,
          event.after.reason ?? null,
        ]);
      expect(mine).toEqual([
        ['sign_in.failure', 'reset_link', 'link_used'],
        ['sign_in.success', 'reset_link', null],
      ]);
      expect(audit.text).not.toContain(token);
      expect(audit.text).not.toContain(newPassword);
    });

    it('ends a removed member’s access and revokes their keys in the removal', async () => {
      const { owner, member, organisationId } = await teamWith('developer');
      const key = await member.client.post('/api/keys', { name: 'member key' });
      expect(key.status).toBe(201);
      const secret: string = key.json.secret;
      const ownerKey = await owner.client.post('/api/keys', { name: 'owner key' });
      expect(ownerKey.status).toBe(201);
      const modelsWith = (bearer: string) =>
        fetch(`${harness.gateway.url}/v1/models`, { headers: { authorization: `Bearer ${bearer}` } });
      expect((await modelsWith(secret)).status).toBe(200);

      const removed = await owner.client.call('DELETE', `/api/organisation/members/${member.accountId}`);
      expect(removed.status).toBe(200);
      expect(removed.json.revokedKeyIds).toEqual([key.json.key.id]);
      const refused = await member.client.get('/api/organisation');
      expect(refused.status).toBe(403);
      expect(refused.json.error.code).toBe('membership_ended');
      expect((await modelsWith(secret)).status).toBe(401);
      expect((await modelsWith(ownerKey.json.secret)).status).toBe(200);
      const keys = await harness.gateway.storage.apiKeys.listByAccount(organisationId);
      expect(keys.filter((entry) => entry.revokedAt === null).map((entry) => entry.name)).toEqual(['owner key']);
      const audit = await owner.client.get('/api/audit?action=member.remove');
      expect(audit.json.events[0].after).toEqual({ revokedKeyIds: [key.json.key.id] });
    });
  },
);
