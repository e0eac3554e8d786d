import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILT_CLI } from '../helpers/cli-path.js';
import { DashboardClient, PASSWORD, uniqueEmail } from '../helpers/dashboard-client.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const run = promisify(execFile);
const STEP_MS = 30_000;

function codeAt(secret: string, at: number): string {
  return new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30, algorithm: 'SHA1' }).generate({
    timestamp: at,
  });
}

function otherCode(code: string): string {
  return String((Number(code) + 1) % 1_000_000).padStart(6, '0');
}

describe.each([{ database: 'sqlite' }, { database: 'postgres' }])(
  'two-step sign-in with an authenticator app on $database',
  ({ database }) => {
    let harness: TestGateway;
    // The gateway's clock stands still at `clock` until the test moves it: TOTP steps are the test's to choose.
    let clock = Math.floor(Date.now() / STEP_MS) * STEP_MS + 1_000;
    const tick = (ms: number) => {
      clock += ms;
      harness.setClock(clock);
    };

    beforeAll(async () => {
      harness = await startTestGateway({
        postgres: database === 'postgres',
        fakeClockMs: clock,
        env: { TRUST_PROXY: 'true' },
      });
    });

    afterAll(async () => {
      await harness?.close();
    });

    /** A client with its own address, so the per-IP login throttle of one test does not reach another. */
    const client = () => {
      const dashboard = new DashboardClient(harness.gateway.url);
      const ip = `10.9.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;
      const call = dashboard.call.bind(dashboard);
      dashboard.call = (method, path, body, options = {}) =>
        call(method, path, body, { ...options, headers: { 'x-forwarded-for': ip, ...options.headers } });
      return dashboard;
    };

    /** A registered account with TOTP on; returns its secret and recovery codes. */
    async function enrolled() {
      const email = uniqueEmail('totp');
      const dashboard = client();
      expect((await dashboard.register(email, PASSWORD)).status).toBe(201);
      const begun = await dashboard.post('/api/security/totp');
      expect(begun.status).toBe(200);
      expect(begun.json.qrCodeDataUrl).toMatch(/^data:image\/svg\+xml;base64,/);
      const secret: string = begun.json.secret;
      // A wrong first code leaves it off.
      const wrong = await dashboard.post('/api/security/totp/confirm', { code: otherCode(codeAt(secret, clock)) });
      expect(wrong.status).toBe(400);
      expect((await dashboard.get('/api/security')).json.totp.enabled).toBe(false);
      const confirmed = await dashboard.post('/api/security/totp/confirm', { code: codeAt(secret, clock) });
      expect(confirmed.status).toBe(200);
      const recoveryCodes: string[] = confirmed.json.recoveryCodes;
      expect(recoveryCodes).toHaveLength(10);
      const security = await dashboard.get('/api/security');
      expect(security.json.totp).toEqual({ enabled: true, recoveryCodesLeft: 10 });
      // The secret is never shown again.
      expect(security.text).not.toContain(secret);
      expect((await dashboard.post('/api/security/totp')).status).toBe(400);
      return { email, secret, recoveryCodes, dashboard };
    }

    async function passwordStep(email: string) {
      const dashboard = client();
      const reply = await dashboard.login(email, PASSWORD);
      expect(reply.status).toBe(200);
      return { dashboard, reply };
    }

    it('asks for a code after the password, refuses wrong and replayed codes, then signs in', async () => {
      const { email, secret } = await enrolled();
      const usedAtEnrolment = codeAt(secret, clock);
      const { dashboard, reply } = await passwordStep(email);
      expect(reply.json.account).toBeNull();
      expect(reply.json.secondFactor.methods).toEqual(['totp', 'recovery_code']);
      const token: string = reply.json.secondFactor.token;
      // The pending sign-in is not a session.
      expect((await dashboard.get('/api/session')).json.account).toBeNull();
      expect((await dashboard.get('/api/keys')).status).toBe(401);

      const wrong = await dashboard.post('/api/auth/second-factor', { token, code: otherCode(usedAtEnrolment) });
      expect(wrong.status).toBe(401);
      expect(wrong.json.error.message).toMatch(/not correct/);
      // The enrolment used this step's code: the same code again is a replay.
      const replayed = await dashboard.post('/api/auth/second-factor', { token, code: usedAtEnrolment });
      expect(replayed.status).toBe(401);
      expect(replayed.json.error.message).toMatch(/used already/);
      expect((await dashboard.get('/api/session')).json.account).toBeNull();

      tick(STEP_MS);
      const accepted = await dashboard.post('/api/auth/second-factor', { token, code: codeAt(secret, clock) });
      expect(accepted.status).toBe(200);
      expect(accepted.json.account.email).toBe(email);
      expect((await dashboard.get('/api/session')).json.account.email).toBe(email);
      // The pending token was single use.
      tick(STEP_MS);
      const again = await client().post('/api/auth/second-factor', { token, code: codeAt(secret, clock) });
      expect(again.status).toBe(403); // a new client has no CSRF token yet
      const sameClient = await dashboard.post('/api/auth/second-factor', { token, code: codeAt(secret, clock) });
      expect(sameClient.status).toBe(401);
      expect(sameClient.json.error.code).toBe('second_factor_expired');

      await harness.flushLogs();
      const refusals = harness.logs.filter((line) => line.includes('"sign_in_refused"'));
      expect(refusals.some((line) => line.includes('invalid_second_factor'))).toBe(true);
      // Codes never reach the log.
      expect(harness.logs.some((line) => line.includes(usedAtEnrolment))).toBe(false);
    });

    it('counts wrong codes as failed logins: from one address the fifth try is throttled', async () => {
      const { email, secret } = await enrolled();
      const { dashboard, reply } = await passwordStep(email);
      const token: string = reply.json.secondFactor.token;
      tick(STEP_MS);
      const right = codeAt(secret, clock);
      // The password step counts until the second step succeeds: it and four wrong codes reach the limit of 5.
      for (let attempt = 0; attempt < 4; attempt++) {
        expect((await dashboard.post('/api/auth/second-factor', { token, code: otherCode(right) })).status).toBe(401);
      }
      const throttled = await dashboard.post('/api/auth/second-factor', { token, code: right });
      expect(throttled.status).toBe(429);
      expect(throttled.headers.get('retry-after')).not.toBeNull();
      expect((await dashboard.get('/api/session')).json.account).toBeNull();
    });

    it('spends the pending sign-in after five wrong codes, whatever address they come from', async () => {
      const { email, secret } = await enrolled();
      const { dashboard, reply } = await passwordStep(email);
      const token: string = reply.json.secondFactor.token;
      tick(STEP_MS);
      const right = codeAt(secret, clock);
      const from = (index: number) => ({
        headers: { 'x-forwarded-for': `10.77.${index}.${Math.floor(Math.random() * 250)}` },
      });
      for (let attempt = 0; attempt < 5; attempt++) {
        const wrong = await dashboard.call(
          'POST',
          '/api/auth/second-factor',
          { token, code: otherCode(right) },
          from(attempt),
        );
        expect(wrong.status).toBe(401);
      }
      const late = await dashboard.call('POST', '/api/auth/second-factor', { token, code: right }, from(9));
      expect(late.status).toBe(401);
      expect(late.json.error.code).toBe('second_factor_expired');
      expect((await dashboard.get('/api/session')).json.account).toBeNull();
    });

    it('takes a recovery code once', async () => {
      const { email, recoveryCodes } = await enrolled();
      const first = await passwordStep(email);
      const signedIn = await first.dashboard.post('/api/auth/second-factor', {
        token: first.reply.json.secondFactor.token,
        recoveryCode: recoveryCodes[3],
      });
      expect(signedIn.status).toBe(200);
      expect((await first.dashboard.get('/api/security')).json.totp.recoveryCodesLeft).toBe(9);
      const second = await passwordStep(email);
      const reused = await second.dashboard.post('/api/auth/second-factor', {
        token: second.reply.json.secondFactor.token,
        recoveryCode: recoveryCodes[3],
      });
      expect(reused.status).toBe(401);
      expect(reused.json.error.message).toMatch(/recovery code/);
    });

    it('turns off only with the password and a code', async () => {
      const { secret, dashboard } = await enrolled();
      tick(STEP_MS);
      const code = codeAt(secret, clock);
      const badPassword = await dashboard.post('/api/security/totp/disable', { password: 'wrong password 1', code });
      expect(badPassword.status).toBe(400);
      expect(badPassword.json.error.field).toBe('password');
      const badCode = await dashboard.post('/api/security/totp/disable', { password: PASSWORD, code: otherCode(code) });
      expect(badCode.status).toBe(400);
      expect(badCode.json.error.field).toBe('code');
      expect((await dashboard.get('/api/security')).json.totp.enabled).toBe(true);
      const off = await dashboard.post('/api/security/totp/disable', { password: PASSWORD, code });
      expect(off.status).toBe(200);
      expect((await dashboard.get('/api/security')).json.totp.enabled).toBe(false);
    });

    it('keeps the second factor through a password reset: the reset and later sign-ins still ask for it', async () => {
      const { email, secret, dashboard } = await enrolled();
      const { stdout } = await run(
        process.execPath,
        [BUILT_CLI, 'accounts', 'reset-link', '--email', email, '--json'],
        {
          env: { ...process.env, ...harness.env },
        },
      );
      const link = new URL(JSON.parse(stdout).url);
      const token = link.searchParams.get('token') ?? '';
      const newPassword = 'a new and long pass phrase';
      const stranger = client();
      await stranger.get('/api/session');
      const reset = await stranger.post('/api/auth/reset-password', { token, newPassword });
      expect(reset.status).toBe(200);
      // The link proves the address, not the second factor: no session yet, the second step instead.
      expect(reset.json.account).toBeNull();
      expect(reset.json.secondFactor.methods).toEqual(['totp', 'recovery_code']);
      expect((await stranger.get('/api/session')).json.account).toBeNull();
      // The reset ended the sessions that were open.
      expect((await dashboard.get('/api/session')).json.account).toBeNull();
      tick(STEP_MS);
      const signedIn = await stranger.post('/api/auth/second-factor', {
        token: reset.json.secondFactor.token,
        code: codeAt(secret, clock),
      });
      expect(signedIn.status).toBe(200);
      expect(signedIn.json.account.email).toBe(email);
      expect((await stranger.get('/api/security')).json.totp).toEqual({ enabled: true, recoveryCodesLeft: 10 });
      // The new password alone still does not sign in.
      const later = await client().login(email, newPassword);
      expect(later.status).toBe(200);
      expect(later.json.account).toBeNull();
      expect(later.json.secondFactor.methods).toContain('totp');
    });

    it('lets the operator reset the second factors from the operator view and the CLI', async () => {
      const first = await enrolled();
      const operatorEmail = uniqueEmail('ops');
      await harness.gateway.accounts.create({ email: operatorEmail, password: PASSWORD, role: 'admin' });
      const operator = client();
      await operator.login(operatorEmail, PASSWORD);
      const target = await harness.gateway.accounts.findByEmail(first.email);
      // A user may not.
      expect((await first.dashboard.post(`/api/admin/accounts/${target.id}/reset-second-factors`)).status).toBe(403);
      expect((await passwordStep(first.email)).reply.json.secondFactor.methods).toContain('totp');
      const reset = await operator.post(`/api/admin/accounts/${target.id}/reset-second-factors`);
      expect(reset.status).toBe(200);
      expect(reset.json).toMatchObject({ totpRemoved: true, passkeysRemoved: 0 });
      const afterReset = await passwordStep(first.email);
      expect(afterReset.reply.json.account.email).toBe(first.email);

      const second = await enrolled();
      expect((await passwordStep(second.email)).reply.json.secondFactor.methods).toContain('totp');
      const { stdout } = await run(
        process.execPath,
        [BUILT_CLI, 'accounts', 'reset-2fa', '--email', second.email, '--json'],
        { env: { ...process.env, ...harness.env } },
      );
      expect(JSON.parse(stdout)).toMatchObject({ email: second.email, totp_removed: true, passkeys_removed: 0 });
      expect((await passwordStep(second.email)).reply.json.account.email).toBe(second.email);
    });
  },
);
