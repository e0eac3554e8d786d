/**
 * PostgreSQL cost of one paid request: every statement the gateway process runs, as the server itself logs it
 * (`log_statement = all` on a private cluster; the gateway's connections carry their own application_name, so
 * the test's own connection is told apart). The count must be a small fixed number per request: the same for
 * every request, stream or not.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import { startPrivatePostgres, type PrivatePostgres } from '../helpers/private-postgres.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const GATEWAY_APPLICATION = 'tollgate-under-test';

describe('PostgreSQL statements per paid request', () => {
  let postgres: PrivatePostgres;
  let harness: TestGateway;

  beforeAll(async () => {
    postgres = await startPrivatePostgres({ log_statement: 'all', log_line_prefix: '[%a] ' });
    harness = await startTestGateway({
      env: { DATABASE_URL: `${postgres.url}?application_name=${GATEWAY_APPLICATION}`, FREE_TOKENS_PER_DAY: '0' },
    });
  });

  afterAll(async () => {
    await harness?.close();
    await postgres?.destroy();
  });

  /**
   * The first word of each statement the gateway ran: `statement:` (simple protocol) or `execute …:` (extended). The
   * budget alerts' reads are left out: their evaluator runs 250 ms after a settlement, off the request's path, so
   * whether one falls inside a measured window depends on how fast the machine is.
   */
  function gatewayStatements(log: string): string[] {
    const pattern = new RegExp(
      `^\\[${GATEWAY_APPLICATION}\\] LOG:\\s+(?:statement|execute [^:]*): \\s*(\\S+)(.*)`,
      'gm',
    );
    return [...log.matchAll(pattern)]
      .filter((match) => !match[2]!.includes('"alert_rules"'))
      .map((match) => match[1]!.toLowerCase());
  }

  async function statementsOf(work: () => Promise<unknown>): Promise<Record<string, number>> {
    const before = gatewayStatements(postgres.serverLog()).length;
    await work();
    // The server writes its log lines as it runs the statements; the reply comes after the last one.
    const seen = gatewayStatements(postgres.serverLog()).slice(before);
    const counts: Record<string, number> = { total: seen.length };
    for (const verb of seen) counts[verb] = (counts[verb] ?? 0) + 1;
    return counts;
  }

  it('is the same small number for every request, streamed or not', async () => {
    const { key, accountId } = await harness.createAccountWithKey(undefined, 'enterprise');
    await harness.gateway.storage.billing.credit({
      accountId,
      kind: 'topup',
      amountNano: parseUsd('10'),
      idempotencyKey: `t-${accountId}`,
      note: null,
      at: Date.now(),
    });
    const openai = new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
    const ask = () =>
      openai.chat.completions.create({
        model: 'beta-5.4',
        messages: [{ role: 'user', content: 'Hi [[sim words=3]]' }],
        max_completion_tokens: 30,
      });
    const stream = async () => {
      const chunks = await openai.chat.completions.create({
        model: 'beta-5.4',
        messages: [{ role: 'user', content: 'Hi [[sim words=3]]' }],
        max_completion_tokens: 30,
        stream: true,
      });
      for await (const _chunk of chunks) void _chunk;
    };
    // The first request of a key also writes its last-used time (at most once a minute per key); not counted.
    await ask();

    const one = await statementsOf(ask);
    const ten = await statementsOf(async () => {
      for (let i = 0; i < 10; i += 1) await ask();
    });
    const streamed = await statementsOf(stream);
    // 1 key lookup (which also reads the account's money); reserve = one conditional statement taking the hold
    // (WITH … UPDATE … INSERT), after a `select set_config` in the same pipeline that commits it asynchronously
    // (postgres-write-batch.ts); settle = one statement doing all of settlement (postgres-billing-statements.ts).
    expect(one).toEqual({ total: 4, select: 2, with: 2 });
    expect(ten.total).toBe(10 * one.total);
    expect(streamed).toEqual(one);
  });
});
