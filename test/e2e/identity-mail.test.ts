import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DashboardClient, PASSWORD, uniqueEmail } from '../helpers/dashboard-client.js';
import { startMailCatcher, type CaughtMail, type MailCatcher } from '../helpers/mail-catcher.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const PUBLIC_BASE_URL = 'http://tollgate.test';
const NEW_PASSWORD = 'a brand new passphrase';
const MINUTE = 60_000;

function tokenOf(mail: CaughtMail): string {
  expect(mail.link?.startsWith(`${PUBLIC_BASE_URL}/`)).toBe(true);
  return new URL(mail.link!).searchParams.get('token')!;
}

describe.each([{ database: 'sqlite' }, { database: 'postgres' }])(
  'mail, verified email, reset, sessions and deletion on $database',
  ({ database }) => {
    let mail: MailCatcher;
    let harness: TestGateway;
    let clock = Date.UTC(2026, 5, 1, 12);

    beforeAll(async () => {
      mail = await startMailCatcher();
      harness = await startTestGateway({
        postgres: database === 'postgres',
        fakeClockMs: clock,
        env: { SMTP_URL: mail.url, MAIL_FROM: 'Tollgate <noreply@tollgate.test>', PUBLIC_BASE_URL },
      });
    });

    afterAll(async () => {
      await harness?.close();
      await mail?.close();
    });

    // Each test starts after the mail throttle's 15-minute window of the one before (all come from 127.0.0.1).
    beforeEach(() => {
      clock += 16 * MINUTE;
      harness.setClock(clock);
    });

    const client = () => new DashboardClient(harness.gateway.url);

    async function registered(email = uniqueEmail()) {
      const dashboard = client();
      const reply = await dashboard.register(email, PASSWORD);
      expect(reply.status).toBe(201);
      const verification = await mail.next(email, 0);
      return { dashboard, email, accountId: reply.json.account.id as string, verification };
    }

    async function verified(email = uniqueEmail()) {
      const person = await registered(email);
      expect(
        (await client().post('/api/auth/verify-email', { token: tokenOf(person.verification) }, { csrf: false }))
          .status,
      ).toBe(403);
      const visitor = client();
      await visitor.open();
      expect((await visitor.post('/api/auth/verify-email', { token: tokenOf(person.verification) })).status).toBe(200);
      return person;
    }

    async function loggedIn(email: string, password = PASSWORD, userAgent?: string) {
      const dashboard = client();
      await dashboard.open();
      const reply = await dashboard.post(
        '/api/auth/login',
        { email, password },
        userAgent === undefined ? {} : { headers: { 'user-agent': userAgent } },
      );
      return { dashboard, status: reply.status };
    }

    async function forgot(email: string, next?: string) {
      const visitor = client();
      await visitor.open();
      return visitor.post('/api/auth/forgot-password', next === undefined ? { email } : { email, next });
    }

    it('names the mail server in the banner, without its credentials', async () => {
      await harness.flushLogs();
      const banner = harness.logs.join('');
      expect(banner).toContain(`mail: ${mail.url} from Tollgate <noreply@tollgate.test> (a verified email is required`);
    });

    it('sends a verification link at registration; keys wait for it; the link works once', async () => {
      const { dashboard, email, verification } = await registered();
      expect(verification.from).toContain('noreply@tollgate.test');
      expect(verification.subject).toMatch(/Confirm your email/);
      expect((await dashboard.get('/api/account/identity')).json).toEqual({
        email,
        emailVerified: false,
        verificationRequired: true,
        mailConfigured: true,
      });
      const refused = await dashboard.post('/api/keys', { name: 'early' });
      expect(refused.status).toBe(403);
      expect(refused.json.error.code).toBe('email_not_verified');
      expect(refused.json.error.message).toContain(email);
      expect((await dashboard.get('/api/keys')).json.keys).toEqual([]);

      const visitor = client();
      await visitor.open();
      const confirmed = await visitor.post('/api/auth/verify-email', { token: tokenOf(verification) });
      expect(confirmed.status).toBe(200);
      expect(confirmed.json).toEqual({ email, emailVerified: true });
      expect((await dashboard.get('/api/account/identity')).json.emailVerified).toBe(true);
      expect((await dashboard.post('/api/keys', { name: 'now' })).status).toBe(201);

      const again = await visitor.post('/api/auth/verify-email', { token: tokenOf(verification) });
      expect(again.status).toBe(400);
      expect(again.json.error).toMatchObject({ code: 'link_used', field: 'token' });
    });

    it('resends the verification link; the newer link replaces the older one', async () => {
      const { dashboard, email, verification } = await registered();
      expect((await dashboard.post('/api/auth/resend-verification')).status).toBe(200);
      const second = await mail.next(email, 1);
      const visitor = client();
      await visitor.open();
      expect((await visitor.post('/api/auth/verify-email', { token: tokenOf(verification) })).json.error.code).toBe(
        'link_used',
      );
      expect((await visitor.post('/api/auth/verify-email', { token: tokenOf(second) })).status).toBe(200);
      const already = await dashboard.post('/api/auth/resend-verification');
      expect(already.status).toBe(400);
      expect(already.json.error.message).toMatch(/already verified/);
    });

    it('resets a forgotten password by mail, ending every other session', async () => {
      const { email } = await verified();
      const laptop = await loggedIn(email);
      const phone = await loggedIn(email);
      expect(laptop.status).toBe(200);
      expect((await phone.dashboard.get('/api/overview')).status).toBe(200);

      const asked = await forgot(email, '/keys');
      expect(asked.status).toBe(200);
      const resetMail = await mail.next(email, 1);
      expect(resetMail.subject).toMatch(/Reset your Tollgate password/);
      expect(new URL(resetMail.link!).pathname).toBe('/reset-password');
      expect(new URL(resetMail.link!).searchParams.get('next')).toBe('/keys');

      const resetter = client();
      await resetter.open();
      const reset = await resetter.post('/api/auth/reset-password', {
        token: tokenOf(resetMail),
        newPassword: NEW_PASSWORD,
      });
      expect(reset.status).toBe(200);
      expect(reset.json.account.email).toBe(email);
      expect((await resetter.get('/api/overview')).status).toBe(200);
      for (const other of [laptop, phone]) {
        expect((await other.dashboard.get('/api/overview')).json.error.code).toBe('not_authenticated');
      }
      expect((await loggedIn(email)).status).toBe(401);
      expect((await loggedIn(email, NEW_PASSWORD)).status).toBe(200);

      const reused = await client().post(
        '/api/auth/reset-password',
        { token: tokenOf(resetMail), newPassword: 'x' },
        { csrf: false },
      );
      expect(reused.status).toBe(403); // no CSRF token: refused before anything
      const second = client();
      await second.open();
      const replay = await second.post('/api/auth/reset-password', {
        token: tokenOf(resetMail),
        newPassword: 'another passphrase 2',
      });
      expect(replay.status).toBe(400);
      expect(replay.json.error.code).toBe('link_used');
      expect((await loggedIn(email, NEW_PASSWORD)).status).toBe(200);
    });

    it('refuses expired and tampered links and a password against the rules, changing nothing', async () => {
      const { email } = await verified();
      await forgot(email);
      const link = await mail.next(email, 1);
      const token = tokenOf(link);
      const visitor = client();
      await visitor.open();

      const weak = await visitor.post('/api/auth/reset-password', { token, newPassword: 'short' });
      expect(weak.status).toBe(400);
      expect(weak.json.error.field).toBe('newPassword');

      const flipped = `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`;
      const tampered = await visitor.post('/api/auth/reset-password', { token: flipped, newPassword: NEW_PASSWORD });
      expect(tampered.status).toBe(400);
      expect(tampered.json.error).toMatchObject({ code: 'invalid_link', field: 'token' });
      const garbage = await visitor.post('/api/auth/reset-password', {
        token: 'not-a-token',
        newPassword: NEW_PASSWORD,
      });
      expect(garbage.json.error.code).toBe('invalid_link');

      // One hour of validity: a minute before the end the link still works (refused only for the weak password);
      // a minute after, it has expired.
      clock += 59 * MINUTE;
      harness.setClock(clock);
      expect((await visitor.post('/api/auth/reset-password', { token, newPassword: 'short' })).json.error.field).toBe(
        'newPassword',
      );
      clock += 2 * MINUTE;
      harness.setClock(clock);
      const expired = await visitor.post('/api/auth/reset-password', { token, newPassword: NEW_PASSWORD });
      expect(expired.status).toBe(400);
      expect(expired.json.error.code).toBe('link_expired');
      expect((await loggedIn(email)).status).toBe(200);
      expect((await loggedIn(email, NEW_PASSWORD)).status).toBe(401);
    });

    it('answers a reset for an unknown address exactly as for a known one, in similar time', async () => {
      const { email } = await verified();
      const unknown = uniqueEmail('nobody');
      const known = await forgot(email);
      const stranger = await forgot(unknown);
      expect(stranger.status).toBe(known.status);
      expect(stranger.json).toEqual(known.json);
      await mail.next(email, 1);
      expect(mail.to(unknown)).toEqual([]);

      const timings: Record<'known' | 'unknown', number[]> = { known: [], unknown: [] };
      for (let round = 0; round < 10; round++) {
        clock += 16 * MINUTE;
        harness.setClock(clock);
        // Alternating which goes first, so a warm-up or a busy moment does not always fall on the same kind.
        const pairs = [
          ['known', email],
          ['unknown', unknown],
        ] as const;
        for (const [kind, address] of round % 2 === 0 ? pairs : [...pairs].reverse()) {
          const visitor = client();
          await visitor.open();
          const started = performance.now();
          const reply = await visitor.post('/api/auth/forgot-password', { email: address });
          timings[kind].push(performance.now() - started);
          expect(reply.status).toBe(200);
        }
      }
      const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
      // The lookup and the mail happen after the reply: both answers do the same work before it.
      const [knownMs, unknownMs] = [median(timings.known), median(timings.unknown)];
      expect(
        Math.abs(knownMs - unknownMs),
        `medians ${knownMs.toFixed(1)} ms and ${unknownMs.toFixed(1)} ms`,
      ).toBeLessThan(30);
    });

    it('rate-limits mail per address, the same for an address with no account', async () => {
      const { email } = await verified();
      const unknown = uniqueEmail('ghost');
      for (const address of [email, unknown]) {
        for (let attempt = 0; attempt < 3; attempt++) expect((await forgot(address)).status).toBe(200);
        const limited = await forgot(address);
        expect(limited.status).toBe(429);
        expect(limited.json.error.code).toBe('too_many_attempts');
        expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
      }
      // Three mails (one verification, three resets) reached the known address, none the unknown one.
      await mail.next(email, 3);
      expect(mail.to(email)).toHaveLength(4);
      expect(mail.to(unknown)).toEqual([]);
    });

    it('rate-limits mail per client IP across addresses', async () => {
      const statuses: number[] = [];
      for (let index = 0; index < 11; index++) statuses.push((await forgot(uniqueEmail('spray'))).status);
      expect(statuses.slice(0, 10).every((status) => status === 200)).toBe(true);
      expect(statuses[10]).toBe(429);
    });

    it('refuses a return page outside the gateway, sending nothing', async () => {
      const { email } = await verified();
      for (const next of ['https://evil.example/', '//evil.example', '/\\evil.example', 'javascript:alert(1)']) {
        const refused = await forgot(email, next);
        expect(refused.status).toBe(400);
        expect(refused.json.error.field).toBe('next');
        expect(refused.json.error.message).toMatch(/path on this gateway/);
      }
      expect(mail.to(email)).toHaveLength(1);
    });

    it('changes the email only once the new address is confirmed', async () => {
      const { dashboard, email } = await verified();
      const wrong = await dashboard.post('/api/account/email', {
        newEmail: uniqueEmail('new'),
        password: 'wrong password!',
      });
      expect(wrong.status).toBe(400);
      expect(wrong.json.error.field).toBe('password');

      const { email: taken } = await verified();
      const toTaken = await dashboard.post('/api/account/email', { newEmail: taken, password: PASSWORD });
      const newEmail = uniqueEmail('moved');
      const toFree = await dashboard.post('/api/account/email', { newEmail, password: PASSWORD });
      expect(toFree.status).toBe(200);
      expect(toTaken.status).toBe(200);
      expect(toTaken.json).toEqual(toFree.json);
      const confirmation = await mail.next(newEmail, 0);
      expect(mail.to(taken)).toHaveLength(1); // only its own verification mail

      // Not yet: the old address still signs in, the new one does not.
      expect((await loggedIn(email)).status).toBe(200);
      expect((await loggedIn(newEmail)).status).toBe(401);
      const visitor = client();
      await visitor.open();
      expect((await visitor.post('/api/auth/verify-email', { token: tokenOf(confirmation) })).json).toEqual({
        email: newEmail,
        emailVerified: true,
      });
      expect((await loggedIn(newEmail)).status).toBe(200);
      expect((await loggedIn(email)).status).toBe(401);
      expect((await dashboard.get('/api/account/identity')).json).toMatchObject({
        email: newEmail,
        emailVerified: true,
      });
    });

    it('lists sessions with their device and ends one, or all but the current one', async () => {
      const { email } = await verified();
      const firefox = await loggedIn(
        email,
        PASSWORD,
        'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0',
      );
      const iphone = await loggedIn(
        email,
        PASSWORD,
        'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1',
      );
      const third = await loggedIn(email);
      const listed = (await firefox.dashboard.get('/api/account/sessions')).json.sessions as Array<
        Record<string, unknown>
      >;
      const devices = listed.map((session) => session.device);
      expect(devices).toEqual(expect.arrayContaining(['Firefox on Linux', 'Safari on iPhone']));
      const current = listed.filter((session) => session.current);
      expect(current).toHaveLength(1);
      expect(current[0]).toMatchObject({
        device: 'Firefox on Linux',
        ip: '127.0.0.1',
        createdAt: clock,
        lastSeenAt: clock,
      });
      const phoneId = listed.find((session) => session.device === 'Safari on iPhone')!.id as string;

      expect((await firefox.dashboard.post(`/api/account/sessions/${phoneId}/end`)).status).toBe(200);
      expect((await iphone.dashboard.get('/api/overview')).status).toBe(401);
      expect((await third.dashboard.get('/api/overview')).status).toBe(200);
      const unknown = await firefox.dashboard.post(`/api/account/sessions/${phoneId}/end`);
      expect(unknown.status).toBe(404);

      // Another person cannot end these sessions by id.
      const { email: otherEmail } = await verified();
      const other = await loggedIn(otherEmail);
      const mine = (await firefox.dashboard.get('/api/account/sessions')).json.sessions as Array<{ id: string }>;
      expect((await other.dashboard.post(`/api/account/sessions/${mine[0]!.id}/end`)).status).toBe(404);

      const ended = await firefox.dashboard.post('/api/account/sessions/end-others');
      expect(ended.json.ended).toBeGreaterThanOrEqual(2);
      expect((await third.dashboard.get('/api/overview')).status).toBe(401);
      expect((await firefox.dashboard.get('/api/overview')).status).toBe(200);
      expect((await firefox.dashboard.get('/api/account/sessions')).json.sessions).toHaveLength(1);
    });

    it('deletes an account: personal data and keys go, the ledger and usage stay', async () => {
      const { dashboard, email, accountId } = await verified();
      const created = await dashboard.post('/api/keys', { name: 'doomed' });
      const secret = created.json.secret as string;
      const openai = new OpenAI({ apiKey: secret, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
      await openai.chat.completions.create({
        model: 'beta-5.4',
        messages: [{ role: 'user', content: 'Hi' }],
        max_tokens: 16,
      });
      const ledgerBefore = await harness.gateway.storage.billing.ledger(accountId, 50);
      const usageBefore = await harness.gateway.storage.usage.listByAccount(accountId, 50);
      expect(usageBefore).toHaveLength(1);

      const wrong = await dashboard.post('/api/account/delete', { password: 'not the password' });
      expect(wrong.status).toBe(400);
      expect(wrong.json.error.field).toBe('password');
      expect((await dashboard.get('/api/overview')).status).toBe(200);

      const deleted = await dashboard.post('/api/account/delete', { password: PASSWORD });
      expect(deleted.status).toBe(200);
      expect((await dashboard.get('/api/overview')).status).toBe(401);
      expect((await loggedIn(email)).status).toBe(401);
      await expect(
        openai.chat.completions.create({ model: 'beta-5.4', messages: [{ role: 'user', content: 'Hi' }] }),
      ).rejects.toMatchObject({ status: 401 });

      const row = await harness.gateway.storage.accounts.findById(accountId);
      expect(row?.email).toBe(`deleted-${accountId}@deleted.invalid`);
      expect(row?.passwordHash).not.toMatch(/^scrypt\$/);
      expect(row?.disabled).toBe(true);
      expect(await harness.gateway.storage.identity.listSessions(accountId)).toEqual([]);
      expect((await harness.gateway.keys.list(accountId)).every((key) => key.revokedAt !== null)).toBe(true);
      expect(await harness.gateway.storage.billing.ledger(accountId, 50)).toEqual(ledgerBefore);
      expect(await harness.gateway.storage.usage.listByAccount(accountId, 50)).toEqual(usageBefore);
      expect(await harness.gateway.storage.billing.verifyLedger()).toEqual([]);

      // The address is free again, for a new account with nothing of the old one.
      const again = await client().register(email, PASSWORD);
      expect(again.status).toBe(201);
      expect(again.json.account.id).not.toBe(accountId);
    });

    it('refuses to delete the last operator account', async () => {
      const email = uniqueEmail('lastop');
      const admins = await harness.gateway.storage.accounts.listWithBalances({ limit: 1000 });
      for (const account of admins) {
        if (account.role === 'admin') await harness.gateway.storage.accounts.setDisabled(account.id, true);
      }
      await harness.gateway.accounts.create({ email, password: PASSWORD, role: 'admin' });
      const operator = await loggedIn(email);
      const refused = await operator.dashboard.post('/api/account/delete', { password: PASSWORD });
      expect(refused.status).toBe(409);
      expect(refused.json.error.code).toBe('deletion_refused');
      expect(refused.json.error.message).toMatch(/last operator/);
      expect((await operator.dashboard.get('/api/overview')).status).toBe(200);
    });
  },
);
