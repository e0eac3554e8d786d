/**
 * Usage retention through the real gateway: per-request rows older than USAGE_RETENTION_DAYS vanish from
 * GET /v1/usage/requests after a retention pass, while the daily rollup keeps their totals, and GET /v1/usage
 * (which reads whole days from the rollup) still reports them.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeExpiredUsage } from '../../src/billing/usage-retention.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const DAY_MS = 86_400_000;

describe.each([{ database: 'sqlite' }, { database: 'postgres' }])('usage retention on $database', ({ database }) => {
  let harness: TestGateway;
  // The gateway process's wall clock: requests are recorded at whatever time it says; it stands still until set.
  let clock = Date.now();

  beforeAll(async () => {
    harness = await startTestGateway({
      postgres: database === 'postgres',
      fakeClockMs: clock,
      env: { USAGE_RETENTION_DAYS: '30' },
    });
  });

  afterAll(async () => {
    await harness?.close();
  });

  it('deletes rows past retention from /v1/usage/requests and keeps their daily totals', async () => {
    expect(harness.gateway.config.usageRetentionDays).toBe(30);
    const { key, accountId } = await harness.createAccountWithKey();
    const client = new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
    const ask = () =>
      client.chat.completions.create({
        model: 'beta-5.4',
        messages: [{ role: 'user', content: 'hello' }],
        max_completion_tokens: 20,
      });
    const today = Date.now();
    const setClock = (at: number) => {
      clock = at;
      harness.setClock(at);
    };
    setClock(today - 40 * DAY_MS);
    await ask();
    await ask();
    setClock(today - 10 * DAY_MS);
    await ask();
    setClock(today);

    const listed = async () => {
      const response = await fetch(`${harness.openaiBaseUrl}/usage/requests?limit=10`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(response.status).toBe(200);
      return ((await response.json()) as { data: unknown[] }).data;
    };
    expect(await listed()).toHaveLength(3);

    const summary = async (query: string) => {
      const response = await fetch(`${harness.openaiBaseUrl}/usage?${query}`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(response.status).toBe(200);
      return (await response.json()) as {
        data: { group: string; requests: number; cost_nano_usd: string; output_tokens: number }[];
        total: { requests: number; output_tokens: number };
      };
    };
    const fiftyDays = `from=${Math.floor((today - 50 * DAY_MS) / 1000)}&to=${Math.floor((today + 1000) / 1000)}`;
    const before = await summary(`${fiftyDays}&group_by=day`);
    expect(before.total.requests).toBe(3);
    const beforeByModel = await summary(`${fiftyDays}&group_by=model`);

    const deleted = await purgeExpiredUsage(harness.gateway.storage.usage, {
      retentionDays: 30,
      now: () => clock,
      batchSize: 1,
    });
    // Other rows of this database are all recent; only this account's two old rows are past 30 days.
    expect(deleted).toBe(2);
    expect(await listed()).toHaveLength(1);
    // Whole days are summed from the rollup, so the summary over the purged days is unchanged.
    expect(await summary(`${fiftyDays}&group_by=day`)).toEqual(before);
    expect(await summary(`${fiftyDays}&group_by=model`)).toEqual(beforeByModel);
    expect(beforeByModel.data).toEqual([expect.objectContaining({ group: 'beta-5.4', requests: 3 })]);

    const oldDay = new Date(today - 40 * DAY_MS).toISOString().slice(0, 10);
    const totals = await harness.gateway.storage.usage.dailyTotals(accountId, oldDay, oldDay);
    expect(totals).toHaveLength(1);
    expect(totals[0]).toMatchObject({ day: oldDay, model: 'beta-5.4', requests: 2 });
    expect(totals[0]!.outputTokens).toBeGreaterThan(0);

    // Retention 0 keeps everything.
    expect(
      await purgeExpiredUsage(harness.gateway.storage.usage, { retentionDays: 0, now: () => today + 1_000 * DAY_MS }),
    ).toBe(0);
    expect(await listed()).toHaveLength(1);
  });
});
