import type { ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import { createRedemptionCodes } from '../../src/billing/redemption-codes.js';
import { DashboardClient, PASSWORD, uniqueEmail } from '../helpers/dashboard-client.js';
import { spawnGateway, startTestGateway, stopProcess, type TestGateway } from '../helpers/test-gateway.js';

const DAY_MS = 86_400_000;
const MINUTE_MS = 60_000;

describe.each([{ database: 'sqlite' }, { database: 'postgres' }])('dashboard security on $database', ({ database }) => {
  let harness: TestGateway;
  /**
   * Puts the gateway's wall clock `offset` ms ahead of the real one. It stands still there until set again: the
   * expiries and windows below are days and minutes long, so the seconds a test takes never matter.
   */
  const setOffset = (offset: number) => harness.setClock(Date.now() + offset);

  beforeAll(async () => {
    harness = await startTestGateway({
      postgres: database === 'postgres',
      fakeClockMs: Date.now(),
      env: { TRUST_PROXY: 'true' },
    });
  });

  afterAll(async () => {
    await harness?.close();
  });

  /** Each client its own client IP (through the trusted proxy header), so login throttling per IP stays per test. */
  const client = (ip = `10.0.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`) => {
    const dashboard = new DashboardClient(harness.gateway.url);
    const call = dashboard.call.bind(dashboard);
    dashboard.call = (method, path, body, options = {}) =>
      call(method, path, body, { ...options, headers: { 'x-forwarded-for': ip, ...options.headers } });
    return dashboard;
  };

  async function registered(email = uniqueEmail()) {
    const dashboard = client();
    const reply = await dashboard.register(email, PASSWORD);
    expect(reply.status).toBe(201);
    return { client: dashboard, email, accountId: reply.json.account.id as string };
  }

  async function chatStatus(secret: string): Promise<number> {
    const openai = new OpenAI({ apiKey: secret, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
    try {
      await openai.chat.completions.create({
        model: 'beta-5.4',
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 8,
      });
      return 200;
    } catch (error) {
      return (error as { status: number }).status;
    }
  }

  describe('CSRF', () => {
    it('refuses every state-changing call without the right token with 403 csrf_failed, changing nothing', async () => {
      const user = await registered();
      const elsewhere = await registered();
      const operatorEmail = uniqueEmail('ops');
      await harness.gateway.accounts.create({ email: operatorEmail, password: PASSWORD, role: 'admin' });
      const operator = client();
      await operator.login(operatorEmail, PASSWORD);
      const key = (await user.client.post('/api/keys', { name: 'kept' })).json;
      const [code] = await createRedemptionCodes(harness.gateway.storage.billing, parseUsd('1'), 1, Date.now());
      const newEmail = uniqueEmail('never');

      const attempts: Array<[DashboardClient, string, unknown]> = [
        [client(), '/api/auth/register', { email: newEmail, password: PASSWORD }],
        [client(), '/api/auth/login', { email: user.email, password: PASSWORD }],
        [user.client, '/api/auth/logout', undefined],
        [user.client, '/api/auth/password', { currentPassword: PASSWORD, newPassword: 'another long password' }],
        [user.client, '/api/keys', { name: 'sneaky' }],
        [user.client, `/api/keys/${key.key.id}/revoke`, undefined],
        [user.client, `/api/keys/${key.key.id}/rotate`, undefined],
        [user.client, '/api/billing/redeem', { code }],
        [user.client, '/api/billing/checkout', { amountUsd: '10' }],
        [operator, `/api/admin/accounts/${user.accountId}/credit`, { amountUsd: '100' }],
        [operator, `/api/admin/accounts/${user.accountId}/tier`, { tier: 'enterprise' }],
        [operator, `/api/admin/accounts/${user.accountId}/disabled`, { disabled: true }],
        [operator, '/api/admin/codes', { amountUsd: '100', count: 5 }],
      ];
      for (const [dashboard, path, body] of attempts) {
        if (dashboard.csrfToken === undefined) await dashboard.open();
        // Missing, wrong, and another session's (valid elsewhere) token.
        for (const csrf of [false, 'forged-token', elsewhere.client.csrfToken!] as const) {
          const reply = await dashboard.post(path, body, { csrf });
          expect(reply.status, `${path} with csrf ${String(csrf)}`).toBe(403);
          expect(reply.json.error.code).toBe('csrf_failed');
        }
      }
      // A request with no cookie at all has no token to match either.
      const bare = await fetch(`${harness.gateway.url}/api/keys`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-csrf-token': user.client.csrfToken! },
        body: '{"name":"x"}',
      });
      expect(bare.status).toBe(403);

      expect(await harness.gateway.storage.accounts.findByEmail(newEmail)).toBeNull();
      expect((await user.client.get('/api/session')).json.account.id).toBe(user.accountId); // still logged in
      expect((await user.client.get('/api/keys')).json.keys).toEqual([
        expect.objectContaining({ id: key.key.id, status: 'active' }),
      ]);
      expect(await chatStatus(key.secret)).toBe(200);
      const account = (await harness.gateway.storage.accounts.findById(user.accountId))!;
      expect(account).toMatchObject({ tier: 'standard', disabled: false });
      expect((await harness.gateway.storage.billing.balance(user.accountId))!.balanceNano).toBe(0n);
      expect((await user.client.post('/api/billing/redeem', { code })).json.creditedUsd).toBe('1'); // the code was not used
      expect((await client().login(user.email, PASSWORD)).status).toBe(200); // the password did not change
    });
  });

  it("answers 404 for another account's key id and leaves the key alone", async () => {
    const owner = await registered();
    const intruder = await registered();
    const { key, secret } = (await owner.client.post('/api/keys', { name: 'prod' })).json;
    for (const action of ['revoke', 'rotate']) {
      const reply = await intruder.client.post(`/api/keys/${key.id}/${action}`);
      expect(reply.status).toBe(404);
      expect(reply.json.error.code).toBe('not_found');
    }
    expect((await intruder.client.get('/api/keys')).json.keys).toEqual([]);
    expect((await owner.client.get('/api/keys')).json.keys).toEqual([
      expect.objectContaining({ id: key.id, status: 'active' }),
    ]);
    expect(await chatStatus(secret)).toBe(200);
  });

  describe('session cookie', () => {
    it('is HttpOnly, SameSite=Lax, Path=/, not Secure over plain HTTP, Secure behind a trusted HTTPS proxy', async () => {
      const visitor = client();
      const first = await visitor.open();
      const [visitorCookie] = first.setCookies;
      expect(visitorCookie).toMatch(/^tg_session=[A-Za-z0-9_-]{43};/);
      expect(visitorCookie).toMatch(/; HttpOnly/);
      expect(visitorCookie).toMatch(/; SameSite=Lax/);
      expect(visitorCookie).toMatch(/; Path=\//);
      expect(visitorCookie).not.toMatch(/Secure/);
      expect(visitorCookie).not.toMatch(/Max-Age/); // a visitor's token lasts the browser session

      const login = await visitor.register(uniqueEmail(), PASSWORD);
      const [sessionCookie] = login.setCookies;
      expect(sessionCookie).toMatch(/; HttpOnly/);
      expect(sessionCookie).toMatch(/; SameSite=Lax/);
      expect(sessionCookie).toMatch(/; Max-Age=2592000/);
      expect(sessionCookie).not.toMatch(/Secure/);

      const https = await visitor.get('/api/session', { headers: { 'x-forwarded-proto': 'https' } });
      expect(https.setCookies[0]).toMatch(/; Secure/);
      expect(https.setCookies[0]).toMatch(/; HttpOnly/);
    });

    it('rotates the id on login and registration: a planted visitor token never becomes a session', async () => {
      const { email } = await registered();
      const attacker = client();
      await attacker.open();
      const planted = attacker.cookie!;
      const victim = client();
      victim.cookie = planted;
      victim.csrfToken = attacker.csrfToken;
      expect((await victim.login(email, PASSWORD)).status).toBe(200);
      expect(victim.cookie).not.toBe(planted);
      expect((await attacker.get('/api/session')).json.account).toBeNull();
      expect((await attacker.get('/api/overview')).status).toBe(401);
      expect((await victim.get('/api/overview')).status).toBe(200);
    });

    it('stores only a hash of the session token', async () => {
      const { client: dashboard, accountId } = await registered();
      const token = dashboard.cookie!;
      const hash = createHash('sha256').update(token).digest('hex');
      const session = await harness.gateway.storage.sessions.findWithAccount(hash);
      expect(session?.account.id).toBe(accountId);
      expect(await harness.gateway.storage.sessions.findWithAccount(token)).toBeNull();
    });

    it('ends idle sessions after 7 days and any session after 30 days', async () => {
      const idle = await registered();
      const active = await registered();
      try {
        setOffset(6 * DAY_MS);
        expect((await idle.client.get('/api/overview')).status).toBe(200); // 6 days idle: still alive (and now touched)
        expect((await active.client.get('/api/overview')).status).toBe(200);
        setOffset(13 * DAY_MS + MINUTE_MS);
        expect((await idle.client.get('/api/overview')).status).toBe(401); // 7 days and a minute since last seen
        for (const day of [12, 18, 24]) {
          setOffset(day * DAY_MS);
          expect((await active.client.get('/api/overview')).status).toBe(200); // seen every 6 days
        }
        setOffset(30 * DAY_MS + MINUTE_MS);
        expect((await active.client.get('/api/overview')).status).toBe(401); // active, but 30 days old
      } finally {
        setOffset(0);
      }
    });
  });

  describe('login throttling', () => {
    it('allows 5 failures per email from one address in 15 minutes, then 429 with retry-after even for the right password', async () => {
      const { email } = await registered();
      const attackerIp = `198.18.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;
      const attacker = client(attackerIp);
      try {
        for (let attempt = 0; attempt < 5; attempt++)
          expect((await attacker.login(email, `wrong guess ${attempt}`)).status).toBe(401);
        const refused = await attacker.login(email, PASSWORD);
        expect(refused.status).toBe(429);
        expect(refused.json.error).toMatchObject({ code: 'too_many_attempts', retryAfterSeconds: expect.any(Number) });
        const retryAfter = Number(refused.headers.get('retry-after'));
        expect(retryAfter).toBe(refused.json.error.retryAfterSeconds);
        expect(retryAfter).toBeGreaterThan(14 * 60);
        expect(retryAfter).toBeLessThanOrEqual(15 * 60);
        // From that address, even a new client (no cookie) gets no further with this email.
        expect((await client(attackerIp).login(email, PASSWORD)).status).toBe(429);
        // The owner, anywhere else, is not locked out by someone else's guesses; nor does that free the guesser.
        expect((await client().login(email, PASSWORD)).status).toBe(200);
        expect((await client(attackerIp).login(email, PASSWORD)).status).toBe(429);

        setOffset(15 * MINUTE_MS + 1000);
        expect((await client(attackerIp).login(email, PASSWORD)).status).toBe(200);
      } finally {
        setOffset(0);
      }
    });

    it('a success resets the email counter', async () => {
      const { email } = await registered();
      const ip = `198.19.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;
      for (let attempt = 0; attempt < 4; attempt++)
        expect((await client(ip).login(email, 'typo typo typo')).status).toBe(401);
      expect((await client(ip).login(email, PASSWORD)).status).toBe(200);
      for (let attempt = 0; attempt < 4; attempt++)
        expect((await client(ip).login(email, 'typo typo typo')).status).toBe(401);
      expect((await client(ip).login(email, PASSWORD)).status).toBe(200);
    });

    it('allows 20 failures per client IP across emails', async () => {
      const ip = `192.0.2.${Math.floor(Math.random() * 250)}`;
      const { email } = await registered();
      for (let attempt = 0; attempt < 20; attempt++)
        expect((await client(ip).login(uniqueEmail('guess'), 'password guess')).status).toBe(401);
      const refused = await client(ip).login(email, PASSWORD);
      expect(refused.status).toBe(429);
      expect((await client().login(email, PASSWORD)).status).toBe(200); // the account itself is not locked
    });

    it('holds against a burst of concurrent guesses', async () => {
      const { email } = await registered();
      const ip = `198.20.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;
      const replies = await Promise.all(
        Array.from({ length: 12 }, (_, index) => client(ip).login(email, `burst guess ${index}`)),
      );
      expect(replies.every((reply) => reply.status === 401 || reply.status === 429)).toBe(true);
      // Guesses that were checked (401) count; refused ones (429) do not. However the burst interleaved, no more
      // than 5 passwords get checked before the email is throttled.
      let checked = replies.filter((reply) => reply.status === 401).length;
      expect(checked).toBeLessThanOrEqual(5);
      for (;;) {
        const reply = await client(ip).login(email, `sequential guess ${checked}`);
        if (reply.status === 429) break;
        expect(reply.status).toBe(401);
        checked += 1;
      }
      expect(checked).toBe(5);
      expect((await client(ip).login(email, PASSWORD)).status).toBe(429);
    });
  });

  it('never stores or logs a password in clear', async () => {
    const first = `pw-${randomBytes(8).toString('hex')}-first`;
    const second = `pw-${randomBytes(8).toString('hex')}-second`;
    const email = uniqueEmail();
    const dashboard = client();
    await dashboard.register(email, first);
    await client().login(email, `${first}-wrong`);
    await dashboard.post('/api/auth/password', { currentPassword: first, newPassword: second });
    await dashboard.post('/api/auth/password', { currentPassword: `${second}x`, newPassword: 'short' });
    await client().login(email, second);
    await client().post('/api/auth/login', { email, password: second }, { csrf: false });
    const account = (await harness.gateway.storage.accounts.findByEmail(email))!;
    expect(account.passwordHash).toMatch(/^scrypt\$/);
    for (const secret of [first, second]) {
      expect(account.passwordHash).not.toContain(secret);
      expect(harness.logs.join('\n')).not.toContain(secret);
    }
    if (database === 'sqlite') {
      const directory = harness.databaseUrl.slice('sqlite:'.length).replace(/\/[^/]+$/, '');
      // Every file the gateway keeps there (the database, its WAL, the settlement journal's folder).
      const files = readdirSync(directory, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile());
      for (const file of files) {
        const bytes = readFileSync(join(file.parentPath, file.name));
        expect(bytes.includes(first)).toBe(false);
        expect(bytes.includes(second)).toBe(false);
      }
    }
  });
});

describe('sessions live in the database', () => {
  it('survive a restart (SQLite)', async () => {
    const harness = await startTestGateway({ demo: true });
    let restarted: ChildProcess | undefined;
    try {
      const dashboard = new DashboardClient(harness.gateway.url);
      await dashboard.register(uniqueEmail(), PASSWORD);
      expect(await harness.gateway.close()).toBe(0);
      const again = await spawnGateway(harness.env);
      restarted = again.child;
      const client = new DashboardClient(again.url);
      client.cookie = dashboard.cookie;
      client.csrfToken = dashboard.csrfToken;
      expect((await client.get('/api/overview')).status).toBe(200);
      expect((await client.post('/api/keys', { name: 'after restart' })).status).toBe(201);
      // The sessions table holds hashes only.
      const db = new Database(harness.databaseUrl.slice('sqlite:'.length), { readonly: true });
      const rows = db.prepare('select id_hash from sessions').all() as Array<{ id_hash: string }>;
      db.close();
      expect(rows.map((row) => row.id_hash)).toContain(createHash('sha256').update(dashboard.cookie!).digest('hex'));
      expect(rows.map((row) => row.id_hash)).not.toContain(dashboard.cookie);
    } finally {
      if (restarted !== undefined) await stopProcess(restarted);
      await harness.close();
    }
  });

  it('work across instances (PostgreSQL)', async () => {
    const harness = await startTestGateway({ demo: true, postgres: true });
    const second = await spawnGateway(harness.env);
    try {
      const onFirst = new DashboardClient(harness.gateway.url);
      await onFirst.register(uniqueEmail(), PASSWORD);
      const onSecond = new DashboardClient(second.url);
      onSecond.cookie = onFirst.cookie;
      onSecond.csrfToken = onFirst.csrfToken;
      expect((await onSecond.get('/api/session')).json.account).not.toBeNull();
      expect((await onSecond.post('/api/auth/logout')).status).toBe(200);
      expect((await onFirst.get('/api/overview')).status).toBe(401); // logged out everywhere
    } finally {
      await stopProcess(second.child);
      await harness.close();
    }
  });

  it('allows REGISTRATIONS_PER_IP new accounts per client IP in 15 minutes, then 429 with retry-after; other addresses go on', async () => {
    // The gateway's wall clock stands still at its start until the test moves it past the window.
    const harness = await startTestGateway({
      env: { TRUST_PROXY: 'true', REGISTRATIONS_PER_IP: '3' },
      fakeClockMs: Date.now(),
    });
    try {
      const from = (ip: string) => {
        const dashboard = new DashboardClient(harness.gateway.url);
        const call = dashboard.call.bind(dashboard);
        dashboard.call = (method, path, body, options = {}) =>
          call(method, path, body, { ...options, headers: { 'x-forwarded-for': ip, ...options.headers } });
        return dashboard;
      };
      const replies = await Promise.all(
        Array.from({ length: 5 }, () => from('198.51.100.20').register(uniqueEmail('bulk'), PASSWORD)),
      );
      // Concurrent attempts count each other: exactly the limit gets through.
      expect(replies.map((reply) => reply.status).sort()).toEqual([201, 201, 201, 429, 429]);
      const refused = replies.find((reply) => reply.status === 429)!;
      expect(refused.json.error).toMatchObject({ code: 'too_many_attempts', retryAfterSeconds: expect.any(Number) });
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(14 * 60);
      const refusedEmail = uniqueEmail('refused');
      expect((await from('198.51.100.20').register(refusedEmail, PASSWORD)).status).toBe(429);
      // Nothing was created for a refused registration.
      expect(await harness.gateway.storage.accounts.findByEmail(refusedEmail)).toBeNull();
      expect((await from('198.51.100.21').register(uniqueEmail('other'), PASSWORD)).status).toBe(201);
      harness.setClock(Date.now() + 15 * MINUTE_MS + 1000);
      expect((await from('198.51.100.20').register(uniqueEmail('later'), PASSWORD)).status).toBe(201);
    } finally {
      await harness.close();
    }
  });

  it('with TRUST_PROXY=1 throttles by the address the proxy saw, whatever the client wrote into X-Forwarded-For', async () => {
    const harness = await startTestGateway({ env: { TRUST_PROXY: '1' } });
    try {
      const email = uniqueEmail();
      await harness.gateway.accounts.create({ email, password: PASSWORD });
      const login = (spoofed: string) => {
        const dashboard = new DashboardClient(harness.gateway.url);
        const call = dashboard.call.bind(dashboard);
        // What nginx's $proxy_add_x_forwarded_for sends: the client's own header, then the address it saw.
        dashboard.call = (method, path, body, options = {}) =>
          call(method, path, body, { ...options, headers: { 'x-forwarded-for': `${spoofed}, 198.51.100.7` } });
        return dashboard;
      };
      for (let attempt = 0; attempt < 20; attempt++)
        expect((await login(`203.0.113.${attempt}`).login(uniqueEmail('guess'), 'password guess')).status).toBe(401);
      expect((await login('203.0.113.99').login(email, PASSWORD)).status).toBe(429);
    } finally {
      await harness.close();
    }
  });

  it("with TRUST_PROXY=1 counts an email's failures per address the proxy saw: spoofing X-Forwarded-For gains no tries, the owner elsewhere logs in", async () => {
    const harness = await startTestGateway({ env: { TRUST_PROXY: '1' } });
    try {
      const email = uniqueEmail();
      await harness.gateway.accounts.create({ email, password: PASSWORD });
      const from = (forwardedFor: string) => {
        const dashboard = new DashboardClient(harness.gateway.url);
        const call = dashboard.call.bind(dashboard);
        dashboard.call = (method, path, body, options = {}) =>
          call(method, path, body, { ...options, headers: { 'x-forwarded-for': forwardedFor } });
        return dashboard;
      };
      for (let attempt = 0; attempt < 5; attempt++)
        expect((await from(`203.0.113.${attempt}, 198.51.100.7`).login(email, 'password guess')).status).toBe(401);
      expect((await from('203.0.113.99, 198.51.100.7').login(email, PASSWORD)).status).toBe(429);
      expect((await from('198.51.100.8').login(email, PASSWORD)).status).toBe(200);
    } finally {
      await harness.close();
    }
  });

  it('makes the cookie Secure when PUBLIC_BASE_URL is https, and ignores forwarded headers without TRUST_PROXY', async () => {
    const secure = await startTestGateway({ env: { PUBLIC_BASE_URL: 'https://gateway.example.com' } });
    const plain = await startTestGateway();
    try {
      const reply = await new DashboardClient(secure.gateway.url).open();
      expect(reply.setCookies[0]).toMatch(/; Secure/);
      const registered = new DashboardClient(secure.gateway.url);
      await registered.open();
      // fetch does not keep Secure cookies over http, but this client does: the session itself works the same.
      await registered.register(uniqueEmail(), PASSWORD);
      expect((await registered.get('/api/overview')).json.baseUrl).toBe('https://gateway.example.com');

      const spoofed = await new DashboardClient(plain.gateway.url).get('/api/session', {
        headers: { 'x-forwarded-proto': 'https' },
      });
      expect(spoofed.setCookies[0]).not.toMatch(/Secure/);
    } finally {
      await secure.close();
      await plain.close();
    }
  });
});
