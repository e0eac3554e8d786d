import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILT_CLI } from '../helpers/cli-path.js';
import { DashboardClient, PASSWORD, uniqueEmail } from '../helpers/dashboard-client.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

/**
 * An organisation pays for its keys, through the shipped gateway and CLI on both databases: a person creates a team
 * organisation in the dashboard, the operator funds it with `tollgate credit --organisation`, a key of the team is
 * billed to the team's wallet (GET /v1/account and the ledger say so) while the person's own wallet stays untouched,
 * `tollgate accounts tier --organisation` sets the team's tier, and `tollgate organisations disable` refuses the key's
 * next request.
 */

const run = promisify(execFile);

describe.each([
  { name: 'sqlite', postgres: false },
  { name: 'postgres', postgres: true },
])('organisation wallets: $name', ({ postgres }) => {
  let harness: TestGateway;

  beforeAll(async () => {
    // No free allowance: every request is charged, so the wallet it was charged to shows it.
    harness = await startTestGateway({ postgres, env: { FREE_TOKENS_PER_DAY: '0' } });
  }, 120_000);

  afterAll(async () => {
    await harness?.close();
  });

  async function cli(args: string[]): Promise<{ code: number; json: any }> {
    try {
      const { stdout } = await run(process.execPath, [BUILT_CLI, ...args, '--json'], {
        env: { ...process.env, ...harness.env },
      });
      return { code: 0, json: JSON.parse(stdout) };
    } catch (error) {
      const failed = error as { code: number; stdout: string };
      return { code: failed.code, json: failed.stdout ? JSON.parse(failed.stdout) : null };
    }
  }

  async function api(key: string, path: string): Promise<{ status: number; json: any }> {
    const response = await fetch(`${harness.gateway.url}${path}`, { headers: { authorization: `Bearer ${key}` } });
    return { status: response.status, json: await response.json() };
  }

  it('bills a team key to the team, funded by the CLI, and refuses it once the team is disabled', async () => {
    const client = new DashboardClient(harness.gateway.url);
    const registered = await client.register(uniqueEmail('team'), PASSWORD);
    expect(registered.status).toBe(201);
    const personId = registered.json.account.id as string;
    const created = await client.post('/api/organisations', { name: 'Team' });
    expect(created.status).toBe(201);
    const teamId = created.json.organisation.id as string;
    expect(teamId).not.toBe(personId);

    // The person's keys: one of the team (made by them), one of their personal organisation.
    const teamKey = (await harness.gateway.keys.create(teamId, personId, { name: 'team' })).secret;
    const ownKey = (await harness.gateway.keys.create(personId, personId, { name: 'own' })).secret;

    const credited = await cli(['credit', '--organisation', teamId, '--usd', '2.5', '--note', 'team budget']);
    expect(credited).toMatchObject({
      code: 0,
      json: { organisation_id: teamId, email: null, amount_nano_usd: '2500000000', balance_nano_usd: '2500000000' },
    });
    // An organisation that does not exist is refused, and nothing is credited.
    expect(await cli(['credit', '--organisation', 'org_missing', '--usd', '1'])).toMatchObject({
      code: 1,
      json: { error: "No organisation with id 'org_missing'." },
    });

    const openai = new OpenAI({ apiKey: teamKey, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
    const { data, response } = await openai.chat.completions
      .create({ model: 'beta-5.4', messages: [{ role: 'user', content: 'Say something short.' }], max_tokens: 64 })
      .withResponse();
    expect(data.choices[0]!.message.content).toBeTruthy();
    const requestId = response.headers.get('x-request-id')!;

    const team = await api(teamKey, '/v1/account');
    expect(team.status).toBe(200);
    expect(team.json).toMatchObject({ object: 'account', id: teamId, name: 'Team', tier: 'standard' });
    const spent = 2_500_000_000n - BigInt(team.json.balance.nano_usd);
    expect(spent).toBeGreaterThan(0n);
    expect(team.json.balance).toMatchObject({ reserved_nano_usd: '0', requests_in_flight: 0 });
    const ledger = await api(teamKey, '/v1/account/ledger');
    expect(ledger.json.data.map((entry: { kind: string; request_id: string | null }) => entry.kind)).toEqual([
      'usage',
      'topup',
    ]);
    expect(ledger.json.data[0]).toMatchObject({ request_id: requestId, amount_nano_usd: (-spent).toString() });
    const usage = await api(teamKey, '/v1/usage/requests');
    expect(usage.json.data.map((record: { request_id: string }) => record.request_id)).toEqual([requestId]);

    // The person's own wallet paid nothing and has no usage.
    const own = await api(ownKey, '/v1/account');
    expect(own.json).toMatchObject({ id: personId, name: 'Personal', balance: { nano_usd: '0' } });
    expect((await api(ownKey, '/v1/usage/requests')).json.data).toEqual([]);
    expect((await cli(['ledger', 'verify'])).json).toMatchObject({ ok: true, mismatches: [] });

    // The operator's tier for the team applies to its keys from their next request, not to the person's own.
    expect(await cli(['accounts', 'tier', '--organisation', teamId, '--tier', 'pro'])).toMatchObject({
      code: 0,
      json: { id: teamId, tier: 'pro', granted_tier: 'pro' },
    });
    expect((await api(teamKey, '/v1/account')).json.tier).toBe('pro');
    expect((await api(ownKey, '/v1/account')).json.tier).toBe('standard');

    // The operator disables the team: its key is refused on its next request; the person's own key is not.
    expect(await cli(['organisations', 'disable', '--organisation', teamId])).toMatchObject({
      code: 0,
      json: { id: teamId, disabled: true },
    });
    const refused = await api(teamKey, '/v1/account');
    expect(refused.status).toBe(401);
    expect(refused.json.error.message).toMatch(/organisation of this API key is disabled/);
    expect((await api(ownKey, '/v1/account')).status).toBe(200);
    await cli(['organisations', 'enable', '--organisation', teamId]);
    expect((await api(teamKey, '/v1/account')).status).toBe(200);
  });
});
