/**
 * PostgreSQL cost of one paid request (issue 8): every statement the gateway sends is counted by wrapping
 * pg's Client#query (which Kysely's pool connections and the hot path's pipelines use) around requests through the
 * real in-process gateway.
 * The count must be a small fixed number per request: the same for every request, stream or not.
 */
import OpenAI from 'openai';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

describe('PostgreSQL statements per paid request', () => {
  let harness: TestGateway;
  const seen: string[] = [];
  let recording = false;
  const originalQuery = pg.Client.prototype.query;

  beforeAll(async () => {
    harness = await startTestGateway({ postgres: true, env: { FREE_TOKENS_PER_DAY: '0' } });
    // Counts a statement per call; the wrapped method is the real one, unchanged in behaviour.
    pg.Client.prototype.query = function countedQuery(this: pg.Client, ...args: unknown[]) {
      if (recording) {
        const [first] = args;
        // A pipeline of bound statements (pipelined-statements.ts) is one call carrying several statements.
        const pipelined = (first as { statements?: readonly { text: string }[] } | undefined)?.statements;
        const texts = pipelined?.map((statement) => statement.text) ?? [typeof first === 'string' ? first : (first as { text?: string } | undefined)?.text ?? ''];
        for (const text of texts) seen.push(text.trim().split(/\s+/)[0]!.toLowerCase());
      }
      return (originalQuery as (...params: unknown[]) => unknown).apply(this, args);
    } as typeof pg.Client.prototype.query;
  });

  afterAll(async () => {
    pg.Client.prototype.query = originalQuery;
    await harness?.close();
  });

  async function statementsOf(work: () => Promise<unknown>): Promise<Record<string, number>> {
    seen.length = 0;
    recording = true;
    try {
      await work();
    } finally {
      recording = false;
    }
    const counts: Record<string, number> = { total: seen.length };
    for (const verb of seen) counts[verb] = (counts[verb] ?? 0) + 1;
    return counts;
  }

  it('is the same small number for every request, streamed or not', async () => {
    const { key, accountId } = await harness.createAccountWithKey(undefined, 'enterprise');
    await harness.gateway.storage.billing.credit({ accountId, kind: 'topup', amountNano: parseUsd('10'), idempotencyKey: `t-${accountId}`, note: null, at: Date.now() });
    const openai = new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
    const ask = () => openai.chat.completions.create({ model: 'beta-5.4', messages: [{ role: 'user', content: 'Hi [[sim words=3]]' }], max_completion_tokens: 30 });
    const stream = async () => {
      const chunks = await openai.chat.completions.create({ model: 'beta-5.4', messages: [{ role: 'user', content: 'Hi [[sim words=3]]' }], max_completion_tokens: 30, stream: true });
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
    // (WITH … UPDATE … INSERT); settle = one statement doing all of settlement (postgres-hot-path.ts).
    expect(one).toEqual({ total: 3, select: 1, with: 2 });
    expect(ten.total).toBe(10 * one.total);
    expect(streamed).toEqual(one);
  });
});
