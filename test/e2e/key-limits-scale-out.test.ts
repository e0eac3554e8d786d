/**
 * A key's spend limit across instances: three real gateway processes (`node dist/src/cli.js serve`)
 * on one PostgreSQL schema and one Redis, behind a round-robin proxy. 200 concurrent requests on a key limited to
 * $0.05 a day, on an account with $100: the key's spend never passes its limit, and the ledger equals the balance.
 * The setup follows scale-out.test.ts.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccountService } from '../../src/accounts/account-service.js';
import { formatUsd, parseUsd } from '../../src/billing/money.js';
import { KeyService } from '../../src/keys/key-service.js';
import { DEFAULT_TIERS } from '../../src/ratelimit/tiers.js';
import { startSimulator } from '../../src/simulator/simulator-server.js';
import { openStorage } from '../../src/storage/open-storage.js';
import type { Storage } from '../../src/storage/types.js';
import { startGatewayProcess, type GatewayProcess } from '../helpers/gateway-process.js';
import { startRoundRobinProxy, type RoundRobinProxy } from '../helpers/round-robin-proxy.js';
import { dropPostgresSchema, POSTGRES_URL } from '../helpers/storage-backends.js';
import { schemaUrl } from '../helpers/test-gateway.js';

const REDIS_URL = process.env.TOLLGATE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

describe('a key spend limit across three gateway processes on one PostgreSQL', () => {
  const schema = `tollgate_keylimit_${randomBytes(6).toString('hex')}`;
  let simulator: Awaited<ReturnType<typeof startSimulator>>;
  let instances: GatewayProcess[] = [];
  let proxy: RoundRobinProxy;
  let storage: Storage;
  let admin: pg.Client;

  beforeAll(async () => {
    admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    await admin.query(`create schema ${schema}`);
    simulator = await startSimulator({ port: 0, host: '127.0.0.1' });
    const env = {
      DATABASE_URL: schemaUrl(schema),
      REDIS_URL,
      OPENAI_BASE_URL: simulator.baseUrls.openai,
      FREE_TOKENS_PER_DAY: '0',
    };
    instances = await Promise.all([startGatewayProcess(env), startGatewayProcess(env), startGatewayProcess(env)]);
    proxy = await startRoundRobinProxy(instances.map((instance) => instance.url));
    storage = await openStorage(POSTGRES_URL, { postgresSchema: schema });
  }, 60_000);

  afterAll(async () => {
    await Promise.all(
      instances.map(async ({ child }) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        child.kill('SIGTERM');
        await once(child, 'exit');
      }),
    );
    await proxy?.close();
    await simulator?.close();
    await storage?.close();
    await admin?.end();
    await dropPostgresSchema(schema);
  });

  it('200 concurrent requests over the three on a $0.05 key of a $100 account never spend past the limit', async () => {
    const accounts = new AccountService(storage.accounts);
    const keys = new KeyService(storage.apiKeys);
    const email = `keylimit-${randomBytes(6).toString('hex')}@example.com`;
    const account = await accounts.create({ email, password: 'correct horse battery staple' });
    await accounts.setTier(email, 'enterprise', DEFAULT_TIERS);
    await storage.billing.credit({
      accountId: account.id,
      kind: 'topup',
      amountNano: parseUsd('100'),
      idempotencyKey: `topup-${account.id}`,
      note: null,
      at: Date.now(),
    });
    const limited = await keys.create(account.id, account.id, {
      name: 'ci',
      permissions: {
        scopes: null,
        models: null,
        spendLimit: { limitNano: parseUsd('0.05'), period: 'day' },
        rateLimit: null,
      },
    });
    const routedBefore = proxy.routed.length;
    const responses = await Promise.all(
      Array.from({ length: 200 }, () =>
        fetch(`${proxy.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${limited.secret}` },
          body: JSON.stringify({
            model: 'beta-5.4',
            messages: [{ role: 'user', content: 'Tell me [[sim words=150]]' }],
            max_completion_tokens: 200,
          }),
        }),
      ),
    );
    const statuses = responses.map((response) => response.status);
    const bodies = await Promise.all(
      responses.map((response) => response.json() as Promise<{ error?: { code: string } }>),
    );
    expect(statuses.filter((status) => status !== 200 && status !== 403)).toEqual([]);
    const admitted = statuses.filter((status) => status === 200).length;
    expect(admitted).toBeGreaterThan(0);
    expect(
      bodies.filter((body) => body.error !== undefined).every((body) => body.error!.code === 'key_spend_limit_reached'),
    ).toBe(true);
    expect(statuses.filter((status) => status === 403).length).toBeGreaterThan(0);
    // Every instance served part of the burst.
    const routed = proxy.routed.slice(routedBefore);
    for (const instance of instances)
      expect(routed.filter((origin) => origin === instance.url).length).toBeGreaterThan(50);

    const { rows } = await admin.query<{
      spent: string;
      records: string;
      balance: string;
      reserved: string;
      key_used: string;
      key_reserved: string;
    }>(
      `select (select coalesce(sum(cost_nano), 0) from ${schema}.usage_records where api_key_id = $2)::text as spent,
              (select count(*) from ${schema}.usage_records where api_key_id = $2)::text as records,
              a.balance_nano::text as balance, a.reserved_nano::text as reserved,
              l.used_nano::text as key_used, l.reserved_nano::text as key_reserved
       from ${schema}.organisations a join ${schema}.spend_limits l on l.organisation_id = a.id
       where a.id = $1 and l.scope = 'key' and l.scope_id = $2`,
      [account.id, limited.record.id],
    );
    const row = rows[0]!;
    const spent = BigInt(row.spent);
    expect(Number(row.records)).toBe(admitted);
    expect(spent).toBeLessThanOrEqual(parseUsd('0.05'));
    // Most of the limit was used: the refusals came from the limit, not from something else.
    expect(spent).toBeGreaterThan(parseUsd('0.03'));
    expect(BigInt(row.key_used)).toBe(spent);
    expect(BigInt(row.key_reserved)).toBe(0n);
    expect(BigInt(row.balance)).toBe(parseUsd('100') - spent);
    expect(BigInt(row.reserved)).toBe(0n);
    expect(await storage.billing.verifyLedger()).toEqual([]);
    const listed = (await keys.list(account.id)).find((key) => key.id === limited.record.id)!;
    expect(formatUsd(listed.spend.usedNano)).toBe(formatUsd(spent));

    // A change made through one instance applies from the next request on the others.
    const [a, b, c] = instances.map((instance) => instance.url) as [string, string, string];
    const manager = await keys.create(account.id, account.id, { name: 'manager' });
    const ask = (url: string) =>
      fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${limited.secret}` },
        body: JSON.stringify({
          model: 'beta-5.4',
          messages: [{ role: 'user', content: 'again' }],
          max_completion_tokens: 20,
        }),
      });
    const patch = (body: unknown) =>
      fetch(`${a}/v1/keys/${limited.record.id}`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${manager.secret}` },
        body: JSON.stringify(body),
      });
    expect((await patch({ spend_limit: { usd: '1', period: 'day' } })).status).toBe(200);
    for (const url of [b, c]) expect((await ask(url)).status).toBe(200);
    expect((await patch({ models: ['delta'] })).status).toBe(200);
    for (const url of [b, c]) {
      const response = await ask(url);
      expect(response.status).toBe(403);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('permission_denied');
    }
  }, 120_000);
});
