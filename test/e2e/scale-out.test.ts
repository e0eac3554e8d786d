/**
 * Scale-out: three real gateway processes (`node dist/src/cli.js serve`) sharing one PostgreSQL schema and one
 * Redis, behind a round-robin proxy, with one simulator as every instance's upstream.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccountService } from '../../src/accounts/account-service.js';
import { parseUsd } from '../../src/billing/money.js';
import { countTextTokens } from '../../src/canonical/count-tokens.js';
import { KeyService } from '../../src/keys/key-service.js';
import { DEFAULT_TIERS } from '../../src/ratelimit/tiers.js';
import { startSimulator } from '../../src/simulator/simulator-server.js';
import { openStorage } from '../../src/storage/open-storage.js';
import type { Storage } from '../../src/storage/types.js';
import { startRoundRobinProxy, type RoundRobinProxy } from '../helpers/round-robin-proxy.js';
import { ALL_MIGRATIONS, dropPostgresSchema, POSTGRES_URL } from '../helpers/storage-backends.js';
import { schemaUrl } from '../helpers/test-gateway.js';
import { startGatewayProcess, type GatewayProcess } from '../helpers/gateway-process.js';

const REDIS_URL = process.env.TOLLGATE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
/**
 * Test-sized timers: holds of a killed instance expire after 15 s (production: at least 60 s), each instance
 * sweeps every 500 ms. The TTL must still outlast every live request: in the 300-request burst on one account
 * (every transaction queues on that account's row lock) on a shared 2-core machine, with the rest of the suite
 * running beside it, requests can take several seconds.
 */
const RESERVATION_TTL_MS = 15_000;

function chat(
  baseUrl: string,
  key: string,
  content = 'Hello [[sim words=3]]',
  extra: Record<string, unknown> = {},
): Promise<Response> {
  return fetch(`${baseUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({
      model: 'beta-5.4',
      messages: [{ role: 'user', content }],
      max_completion_tokens: 30,
      ...extra,
    }),
  });
}

describe('scale-out: three gateway processes on one PostgreSQL and one Redis', () => {
  const schema = `tollgate_scale_${randomBytes(6).toString('hex')}`;
  let simulator: Awaited<ReturnType<typeof startSimulator>>;
  let instances: GatewayProcess[] = [];
  let proxy: RoundRobinProxy;
  let storage: Storage;
  let accounts: AccountService;
  let keys: KeyService;
  let admin: pg.Client;

  beforeAll(async () => {
    admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    // An empty schema: the three processes race to migrate it.
    await admin.query(`create schema ${schema}`);
    simulator = await startSimulator({ port: 0, host: '127.0.0.1' });
    const env = {
      // The schema rides in the URL (libpq's `options`), as a deployment sharing a database would set it.
      DATABASE_URL: schemaUrl(schema),
      REDIS_URL,
      OPENAI_BASE_URL: simulator.baseUrls.openai,
      FREE_TOKENS_PER_DAY: '0',
      RESERVATION_TTL_MS: String(RESERVATION_TTL_MS),
      TOLLGATE_SHORT_TIMERS: '1',
      SWEEP_INTERVAL_MS: '500',
      // Each instance writes the checkpoints of its streams' delivered output twice a second (production: 3 s).
      CHECKPOINT_INTERVAL_MS: '500',
    };
    instances = await Promise.all([startGatewayProcess(env), startGatewayProcess(env), startGatewayProcess(env)]);
    proxy = await startRoundRobinProxy(instances.map((instance) => instance.url));
    storage = await openStorage(POSTGRES_URL, { postgresSchema: schema });
    accounts = new AccountService(storage.accounts);
    keys = new KeyService(storage.apiKeys);
  }, 45_000);

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

  async function fundedAccount(usd: string, tier = 'enterprise') {
    const email = `scale-${randomBytes(6).toString('hex')}@example.com`;
    const account = await accounts.create({ email, password: 'correct horse battery staple' });
    await accounts.setTier(email, tier, DEFAULT_TIERS);
    const first = await keys.create(account.id, account.id, { name: 'first' });
    const second = await keys.create(account.id, account.id, { name: 'second' });
    if (usd !== '0')
      await storage.billing.credit({
        accountId: account.id,
        kind: 'topup',
        amountNano: parseUsd(usd),
        idempotencyKey: `topup-${account.id}`,
        note: null,
        at: Date.now(),
      });
    return { accountId: account.id, key: first.secret, keyId: first.record.id, otherKey: second.secret };
  }

  async function accountMoney(accountId: string) {
    const { rows } = await admin.query<{
      balance: string;
      reserved: string;
      holds: string;
      unbilled: string;
      records: string;
      charged: string;
    }>(
      `select a.balance_nano::text as balance, a.reserved_nano::text as reserved,
              (select count(*) from ${schema}.reservations r where r.account_id = a.id)::text as holds,
              (select coalesce(sum(u.unbilled_nano), 0) from ${schema}.usage_records u where u.account_id = a.id)::text as unbilled,
              (select count(*) from ${schema}.usage_records u where u.account_id = a.id)::text as records,
              (select coalesce(sum(u.cost_nano), 0) from ${schema}.usage_records u where u.account_id = a.id)::text as charged
       from ${schema}.organisations a where a.id = $1`,
      [accountId],
    );
    const row = rows[0]!;
    return {
      balance: BigInt(row.balance),
      reserved: BigInt(row.reserved),
      holds: Number(row.holds),
      unbilled: BigInt(row.unbilled),
      records: Number(row.records),
      charged: BigInt(row.charged),
    };
  }

  it('all three came up on one empty schema at once; each migration applied exactly once', async () => {
    expect(instances).toHaveLength(3);
    const { rows } = await admin.query<{ name: string }>(
      `select name from ${schema}.tollgate_migrations order by name`,
    );
    expect(rows.map((row) => row.name)).toEqual(ALL_MIGRATIONS);
    for (const instance of instances) expect((await fetch(`${instance.url}/healthz`)).status).toBe(200);
  });

  it('a key revoked through instance A fails on B and C on their very next request; so does a disabled organisation', async () => {
    const [a, b, c] = instances.map((instance) => instance.url) as [string, string, string];
    const { key, keyId, otherKey, accountId } = await fundedAccount('5');
    // Each instance has served the key once, so a cache (if there were one) would hold it.
    for (const url of [a, b, c]) expect((await chat(url, key)).status).toBe(200);
    const revoked = await fetch(`${a}/v1/keys/${keyId}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${otherKey}` },
    });
    expect(revoked.status).toBe(200);
    for (const url of [b, c]) {
      const response = await chat(url, key);
      expect(response.status).toBe(401);
      expect(((await response.json()) as { error: { message: string } }).error.message).toMatch(/revoked/);
    }
    for (const url of [a, b, c]) expect((await chat(url, otherKey)).status).toBe(200);
    // Disabling the key's organisation (as an operator would, straight in the shared database) takes effect everywhere at once.
    await admin.query(`update ${schema}.organisations set disabled = 1 where id = $1`, [accountId]);
    for (const url of [a, b, c]) {
      const response = await chat(url, otherKey);
      expect(response.status).toBe(401);
      expect(((await response.json()) as { error: { message: string } }).error.message).toMatch(/disabled/);
    }
  });

  it("one key's rate limit is shared: exactly the limit admitted across the three", async () => {
    const { key } = await fundedAccount('10', 'standard');
    const routedBefore = proxy.routed.length;
    // 15 in flight at a time (5 per instance): enough overlap to race the instances against each other, but
    // not so much event-loop lag on this shared 2-core machine that a Redis call passes the limiter's 200 ms
    // command timeout, which the default fail-open policy would admit (a documented trade-off, not sharing).
    const statuses: number[] = [];
    let sent = 0;
    await Promise.all(
      Array.from({ length: 15 }, async () => {
        while (sent < 150) {
          sent += 1;
          const response = await chat(proxy.url, key);
          statuses.push(response.status);
          await response.body?.cancel();
        }
      }),
    );
    expect(statuses.filter((status) => status === 200)).toHaveLength(100);
    expect(statuses.filter((status) => status === 429)).toHaveLength(50);
    // The proxy spread them evenly over the three instances.
    const routed = proxy.routed.slice(routedBefore);
    for (const instance of instances) expect(routed.filter((origin) => origin === instance.url)).toHaveLength(50);
  });

  it('300 concurrent paid requests over the three on a balance for about 100 never overdraw; the ledger sums to the balance', async () => {
    // One request's exact price, measured: the simulator's reply to a given prompt is deterministic.
    const probe = await fundedAccount('1');
    const probeResponse = await chat(proxy.url, probe.key);
    expect(probeResponse.status).toBe(200);
    const cost = BigInt(((await probeResponse.json()) as { usage: { cost_nano_usd: string } }).usage.cost_nano_usd);
    expect(cost).toBeGreaterThan(0n);

    const { accountId, key } = await fundedAccount('0');
    const funded = cost * 100n;
    await storage.billing.credit({
      accountId,
      kind: 'topup',
      amountNano: funded,
      idempotencyKey: `topup-${accountId}`,
      note: null,
      at: Date.now(),
    });
    const responses = await Promise.all(Array.from({ length: 300 }, () => chat(proxy.url, key)));
    const statuses = responses.map((response) => response.status);
    await Promise.all(responses.map((response) => response.body?.cancel()));
    const admitted = statuses.filter((status) => status === 200).length;
    // Everything else was refused for want of balance (403 insufficient_balance), nothing failed otherwise.
    expect(statuses.filter((status) => status !== 200 && status !== 403)).toEqual([]);
    expect(admitted).toBeGreaterThan(0);

    const money = await accountMoney(accountId);
    expect(money.records).toBe(admitted);
    // Whole replies cost exactly the probe's price; near the end of the balance a request may start on the part of
    // its first slice the balance still covers and end as a length stop for less: at most 100 whole.
    const { rows: records } = await admin.query<{ status: string; cost: string }>(
      `select status, cost_nano::text as cost from ${schema}.usage_records where account_id = $1`,
      [accountId],
    );
    const whole = records.filter((record) => record.status === 'ok');
    expect(whole.every((record) => BigInt(record.cost) === cost)).toBe(true);
    expect(whole.length).toBeLessThanOrEqual(100);
    expect(
      records
        .filter((record) => record.status !== 'ok')
        .every((record) => record.status === 'slice_refused' && BigInt(record.cost) < cost),
    ).toBe(true);
    expect(money.charged).toBe(records.reduce((sum, record) => sum + BigInt(record.cost), 0n));
    expect(money.balance).toBe(funded - money.charged);
    expect(money.balance).toBeGreaterThanOrEqual(0n);
    expect(money.unbilled).toBe(0n);
    expect(money).toMatchObject({ reserved: 0n, holds: 0 });
    expect(await storage.billing.verifyLedger()).toEqual([]);
    // The daily rollup, written in the same transactions, agrees.
    const today = new Date().toISOString().slice(0, 10);
    const [totals] = (await storage.usage.totalsByAccount(today, today)).filter((row) => row.accountId === accountId);
    expect(totals).toMatchObject({ requests: admitted, costNano: money.charged });
  }, 40_000);

  it('200 concurrent streams without max_tokens over the three, on a balance for about 50 replies: holds grow in slices, never overdraw', async () => {
    const { accountId, key } = await fundedAccount('0');
    // beta-5.4 replies of about 400 output tokens (~$0.006 each): $0.30 is about 50 of them.
    const funded = parseUsd('0.30');
    await storage.billing.credit({
      accountId,
      kind: 'topup',
      amountNano: funded,
      idempotencyKey: `topup-${accountId}`,
      note: null,
      at: Date.now(),
    });
    const responses = await Promise.all(
      Array.from({ length: 200 }, () =>
        chat(proxy.url, key, 'A story [[sim words=300]]', { stream: true, max_completion_tokens: undefined }),
      ),
    );
    const bodies = await Promise.all(responses.map((response) => response.text()));
    const admitted = responses.filter((response) => response.status === 200).length;
    expect(responses.filter((response) => response.status !== 200 && response.status !== 403)).toEqual([]);
    expect(admitted).toBeGreaterThan(0);
    // Every refusal and every cut in the caller's protocol: a 403 insufficient_balance error body, or a stream that
    // ends with finish_reason stop (whole) or length (the balance refused its next slice).
    const finishes = { stop: 0, length: 0 };
    responses.forEach((response, index) => {
      if (response.status === 403) {
        expect(JSON.parse(bodies[index]!)).toMatchObject({
          error: { code: 'insufficient_balance', type: expect.any(String) },
        });
        return;
      }
      const reason = /"finish_reason":"(stop|length)"/.exec(bodies[index]!)?.[1] as 'stop' | 'length';
      expect(reason).toBeDefined();
      finishes[reason] += 1;
      expect(bodies[index]!.trimEnd().endsWith('data: [DONE]')).toBe(true);
    });
    const money = await accountMoney(accountId);
    expect(money).toMatchObject({ reserved: 0n, holds: 0, unbilled: 0n, records: admitted });
    expect(money.balance).toBeGreaterThanOrEqual(0n);
    expect(money.balance).toBe(funded - money.charged);
    const { rows } = await admin.query<{ status: string; n: string }>(
      `select status, count(*)::text as n from ${schema}.usage_records where account_id = $1 group by status`,
      [accountId],
    );
    const byStatus = Object.fromEntries(rows.map((row) => [row.status, Number(row.n)]));
    expect(byStatus).toEqual({
      ...(finishes.stop > 0 ? { ok: finishes.stop } : {}),
      ...(finishes.length > 0 ? { slice_refused: finishes.length } : {}),
    });
    expect(await storage.billing.verifyLedger()).toEqual([]);
  }, 60_000);

  it('SIGKILL of one instance mid-stream loses no settled record; another instance bills the delivered output at its last checkpoint', async () => {
    const victim = instances[2]!;
    const { accountId, key } = await fundedAccount('5');
    // Settled on the victim before it dies: these must survive.
    const settledIds: string[] = [];
    for (let i = 0; i < 5; i += 1) {
      const response = await chat(victim.url, key);
      expect(response.status).toBe(200);
      settledIds.push(response.headers.get('x-request-id')!);
      await response.body?.cancel();
    }
    // Streams that will still be running when it dies: their holds become orphans. Each is read until the
    // victim has written a checkpoint of what it delivered (the hold's checkpoint columns, read from outside).
    const streams = await Promise.all(
      Array.from({ length: 4 }, async () => {
        const response = await chat(victim.url, key, 'Tell a long story [[sim words=400 chunk-delay=50]]', {
          stream: true,
          max_completion_tokens: 800,
        });
        expect(response.status).toBe(200);
        const reader = response.body!.getReader();
        const decoder = new TextDecoder();
        let text = '';
        const done = await reader.read();
        text += decoder.decode(done.value);
        return {
          reader,
          requestId: response.headers.get('x-request-id')!,
          read: () => text,
          more: async () => {
            const chunk = await reader.read();
            if (chunk.value !== undefined) text += decoder.decode(chunk.value);
            return chunk.done !== true;
          },
        };
      }),
    );
    const streamIds = streams.map((stream) => stream.requestId);
    const checkpointed = async () => {
      const { rows } = await admin.query<{ n: string }>(
        `select count(*)::text as n from ${schema}.reservations where request_id = any($1) and checkpoint_at is not null and checkpoint_output_tokens > 0`,
        [streamIds],
      );
      return Number(rows[0]!.n);
    };
    // Keep reading (so the victim keeps delivering) until every stream has a checkpoint; bounded by the streams' end.
    while ((await checkpointed()) < streams.length) {
      const alive = await Promise.all(streams.map((stream) => stream.more()));
      expect(alive.every(Boolean)).toBe(true);
    }
    const before = await accountMoney(accountId);
    expect(before.holds).toBe(4);
    expect(before.reserved).toBeGreaterThan(0n);
    const { rows: lastCheckpoints } = await admin.query<{ request_id: string; output: string; input: string }>(
      `select request_id, checkpoint_output_tokens::text as output, checkpoint_input_tokens::text as input from ${schema}.reservations where request_id = any($1)`,
      [streamIds],
    );

    victim.child.kill('SIGKILL');
    await once(victim.child, 'exit');
    proxy.remove(victim.url);
    await Promise.all(
      streams.map(({ reader }) =>
        reader
          .read()
          .then(() => reader.cancel())
          .catch(() => undefined),
      ),
    );
    // What each client received before the kill (whole SSE frames' content): at least what the checkpoint bills.
    const delivered = streams.map((stream) => ({ requestId: stream.requestId, text: contentOf(stream.read()) }));

    // Every record settled before the kill is there, charged, with its ledger entry.
    const { rows } = await admin.query<{ request_id: string }>(
      `select request_id from ${schema}.usage_records where account_id = $1`,
      [accountId],
    );
    expect(rows.map((row) => row.request_id).sort()).toEqual([...settledIds].sort());
    const ledger = await storage.billing.ledger(accountId, 50);
    expect(
      ledger
        .filter((entry) => entry.kind === 'usage')
        .map((entry) => entry.requestId)
        .sort(),
    ).toEqual([...settledIds].sort());

    // The survivors keep serving through the balancer...
    for (let i = 0; i < 4; i += 1) expect((await chat(proxy.url, key)).status).toBe(200);
    // ...and once the dead instance's holds expire (TTL + a sweep or two), one of them settles each at its last
    // checkpoint: the input and the output delivered by then, as instance_lost, instead of releasing it free.
    const deadline = Date.now() + RESERVATION_TTL_MS + 6_000;
    let after = await accountMoney(accountId);
    while ((after.holds > 0 || after.reserved !== 0n) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      after = await accountMoney(accountId);
    }
    expect(after).toMatchObject({ holds: 0, reserved: 0n, unbilled: 0n, records: 13 });
    const lost = await storage.usage.listByAccount(accountId, 50);
    for (const checkpoint of lastCheckpoints) {
      const record = lost.find((row) => row.requestId === checkpoint.request_id)!;
      expect(record).toMatchObject({
        status: 'instance_lost',
        stream: true,
        outputTokens: Number(checkpoint.output),
        inputTokens: Number(checkpoint.input),
      });
      expect(record.outputTokens).toBeGreaterThan(0);
      // Billed at list price: input and delivered output of beta-5.4 ($2.50 / $15 per million).
      expect(record.costNano).toBe(BigInt(record.inputTokens) * 2_500n + BigInt(record.outputTokens) * 15_000n);
      // Never more than the client received (the checkpoint lags delivery by at most one interval).
      const received = delivered.find((stream) => stream.requestId === checkpoint.request_id)!.text;
      // (Counted a batch at a time, a checkpoint may count a token more per batch where BPE would merge across it.)
      expect(record.outputTokens).toBeLessThanOrEqual(countTextTokens(received) + 8);
    }
    expect(after.balance).toBe(parseUsd('5') - after.charged);
    expect(await storage.billing.verifyLedger()).toEqual([]);
  }, 60_000);
});

/** The assistant text of an OpenAI chat SSE body's complete `data:` frames. */
function contentOf(sse: string): string {
  let text = '';
  for (const frame of sse.split('\n\n').slice(0, -1)) {
    const data = frame
      .split('\n')
      .find((line) => line.startsWith('data: '))
      ?.slice(6);
    if (data === undefined || data === '[DONE]') continue;
    const chunk = JSON.parse(data) as { choices?: Array<{ delta?: { content?: string } }> };
    text += chunk.choices?.[0]?.delta?.content ?? '';
  }
  return text;
}
