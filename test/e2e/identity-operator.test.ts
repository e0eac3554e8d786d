import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILT_CLI } from '../helpers/cli-path.js';
import { DashboardClient, PASSWORD, uniqueEmail } from '../helpers/dashboard-client.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const run = promisify(execFile);

/** A gateway with no mail configured: the operator verifies addresses and hands out reset links. */
describe('identity without mail: the operator view and the CLI', () => {
  let harness: TestGateway;

  beforeAll(async () => {
    // REQUIRE_VERIFIED_EMAIL on explicitly: without mail it defaults to off.
    harness = await startTestGateway({ env: { REQUIRE_VERIFIED_EMAIL: 'true' } });
  });

  afterAll(async () => {
    await harness?.close();
  });

  const client = () => new DashboardClient(harness.gateway.url);

  async function cli(...args: string[]) {
    const { stdout } = await run(process.execPath, [BUILT_CLI, ...args, '--json'], {
      env: { ...process.env, ...harness.env },
    });
    return JSON.parse(stdout);
  }

  async function operator(): Promise<DashboardClient> {
    const email = uniqueEmail('ops');
    await harness.gateway.accounts.create({ email, password: PASSWORD, role: 'admin' });
    const dashboard = client();
    expect((await dashboard.login(email, PASSWORD)).status).toBe(200);
    return dashboard;
  }

  it('says in the banner that no mail is sent and what to do instead', async () => {
    await harness.flushLogs();
    expect(harness.logs.join('')).toContain('mail: not configured (set SMTP_URL and MAIL_FROM)');
  });

  it('tells the person that reset needs the operator, sending nothing', async () => {
    const visitor = client();
    await visitor.open();
    const reply = await visitor.post('/api/auth/forgot-password', { email: uniqueEmail() });
    expect(reply.status).toBe(409);
    expect(reply.json.error.code).toBe('mail_not_configured');
    expect(reply.json.error.message).toMatch(/Ask its operator/);
  });

  it('lets the operator mark an address verified, which unlocks keys', async () => {
    const person = client();
    const email = uniqueEmail();
    const registered = await person.register(email, PASSWORD);
    expect((await person.get('/api/account/identity')).json).toMatchObject({
      emailVerified: false,
      verificationRequired: true,
      mailConfigured: false,
    });
    expect((await person.post('/api/keys', { name: 'k' })).json.error.code).toBe('email_not_verified');
    const ops = await operator();
    const id = registered.json.account.id as string;
    expect((await person.post(`/api/admin/accounts/${id}/verify-email`)).status).toBe(403);
    const verified = await ops.post(`/api/admin/accounts/${id}/verify-email`);
    expect(verified.status).toBe(200);
    expect(verified.json.emailVerified).toBe(true);
    expect((await person.post('/api/keys', { name: 'k' })).status).toBe(201);
  });

  it('gives the operator a single-use reset link that ends the other sessions', async () => {
    const person = client();
    const email = uniqueEmail();
    const id = (await person.register(email, PASSWORD)).json.account.id as string;
    const ops = await operator();
    const issued = await ops.post(`/api/admin/accounts/${id}/reset-link`);
    expect(issued.status).toBe(200);
    expect(issued.json.url).toBeNull(); // no PUBLIC_BASE_URL here: the dashboard prefixes its own origin
    expect(issued.json.path).toMatch(/^\/reset-password\?token=[\w-]{43}$/);
    const token = new URL(issued.json.path, 'http://x').searchParams.get('token')!;
    const visitor = client();
    await visitor.open();
    expect(
      (await visitor.post('/api/auth/reset-password', { token, newPassword: 'operator gave me this' })).status,
    ).toBe(200);
    expect((await person.get('/api/overview')).status).toBe(401);
    expect((await client().login(email, 'operator gave me this')).status).toBe(200);
  });

  it('does both from the CLI', async () => {
    const person = client();
    const email = uniqueEmail('cli');
    await person.register(email, PASSWORD);
    expect(await cli('accounts', 'verify-email', '--email', email)).toMatchObject({ email, email_verified: true });
    expect((await person.get('/api/account/identity')).json.emailVerified).toBe(true);

    const link = await cli('accounts', 'reset-link', '--email', email);
    expect(link.url).toMatch(/^http:\/\/127\.0\.0\.1:0\/reset-password\?token=[\w-]{43}$/);
    const token = new URL(link.url as string).searchParams.get('token')!;
    const visitor = client();
    await visitor.open();
    expect(
      (await visitor.post('/api/auth/reset-password', { token, newPassword: 'from the command line' })).status,
    ).toBe(200);
    expect((await client().login(email, 'from the command line')).status).toBe(200);
  });

  it('marks accounts the operator creates from the CLI as verified', async () => {
    const email = uniqueEmail('made');
    await run(process.execPath, [BUILT_CLI, 'accounts', 'create', '--email', email, '--password', PASSWORD, '--json'], {
      env: { ...process.env, ...harness.env },
    });
    const person = client();
    expect((await person.login(email, PASSWORD)).status).toBe(200);
    expect((await person.get('/api/account/identity')).json.emailVerified).toBe(true);
  });
});
