/**
 * Prompt caching priced end to end on alpha-sonnet-5: the simulator reports 10,000 cache reads, 2,000 5-minute and
 * 1,000 1-hour cache writes for every request (`[[sim cache-read=… cache-write=… cache-write-1h=…]]`), and each of
 * the four client protocols, whole and streamed, reports them in its own fields and is charged exactly
 * reads × $0.30/M + 5-minute writes × $3.75/M + 1-hour writes × $6/M + uncached × $3/M + output × $15/M. The usage
 * records, the ledger, the balance, the usage API and the dashboard all carry the 1-hour writes. On SQLite and
 * PostgreSQL (the storage keeps the 1-hour count in new columns).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import { DashboardClient, PASSWORD } from '../helpers/dashboard-client.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const MODEL = 'alpha-sonnet-5';
const READ = 10_000;
const WRITE_5M = 2_000;
const WRITE_1H = 1_000;
const CACHED = READ + WRITE_5M + WRITE_1H;
/** About 14,000 prompt tokens, so that every directed count fits in the prompt. */
const LONG_PROMPT = `${'The toll road keeps a ledger of every crossing and its price. '.repeat(1_200)}[[sim words=6 cache-read=${READ} cache-write=${WRITE_5M} cache-write-1h=${WRITE_1H}]]`;

/** alpha-sonnet-5's prices in nano-USD a token: $3/M in, $15/M out, reads 0.1x, 5-minute writes 1.25x, 1-hour 2x. */
function expectedCost(uncached: number, output: number): bigint {
  return (
    BigInt(uncached) * 3_000n +
    BigInt(READ) * 300n +
    BigInt(WRITE_5M) * 3_750n +
    BigInt(WRITE_1H) * 6_000n +
    BigInt(output) * 15_000n
  );
}

interface Charged {
  route: string;
  uncached: number;
  output: number;
  costNano: bigint;
}

/** The `data:` payloads of an SSE body, parsed (`[DONE]` left out). */
function sseData(text: string): any[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith('data: ') && line !== 'data: [DONE]')
    .map((line) => JSON.parse(line.slice(6)));
}

describe.each([{ database: 'sqlite' }, { database: 'postgres' }])('cache pricing on $database', ({ database }) => {
  let harness: TestGateway;

  beforeAll(async () => {
    harness = await startTestGateway({ postgres: database === 'postgres', env: { FREE_TOKENS_PER_DAY: '0' } });
  });

  afterAll(async () => {
    await harness?.close();
  });

  async function post(path: string, key: string, body: unknown, headers: Record<string, string> = {}) {
    const response = await fetch(`${harness.gateway.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    expect(response.status).toBe(200);
    return { response, text: await response.text() };
  }

  /** One request on each protocol, whole and streamed, each checked against its own usage fields. */
  async function sendOnEveryRoute(key: string): Promise<Charged[]> {
    const charged: Charged[] = [];
    const anthropicBody = { model: MODEL, max_tokens: 40, messages: [{ role: 'user', content: LONG_PROMPT }] };
    const anthropicHeaders = { 'anthropic-version': '2023-06-01' };

    const message = JSON.parse((await post('/v1/messages', key, anthropicBody, anthropicHeaders)).text);
    expect(message.usage).toMatchObject({
      cache_read_input_tokens: READ,
      cache_creation_input_tokens: WRITE_5M + WRITE_1H,
      cache_creation: { ephemeral_5m_input_tokens: WRITE_5M, ephemeral_1h_input_tokens: WRITE_1H },
    });
    charged.push({
      route: 'anthropic',
      uncached: message.usage.input_tokens,
      output: message.usage.output_tokens,
      costNano: BigInt(message.usage.cost_nano_usd),
    });

    const anthropicStream = sseData(
      (await post('/v1/messages', key, { ...anthropicBody, stream: true }, anthropicHeaders)).text,
    );
    const start = anthropicStream.find((event) => event.type === 'message_start').message.usage;
    expect(start).toMatchObject({
      cache_read_input_tokens: READ,
      cache_creation_input_tokens: WRITE_5M + WRITE_1H,
      cache_creation: { ephemeral_5m_input_tokens: WRITE_5M, ephemeral_1h_input_tokens: WRITE_1H },
    });
    const delta = anthropicStream.find((event) => event.type === 'message_delta').usage;
    expect(delta).toMatchObject({ cache_read_input_tokens: READ, cache_creation_input_tokens: WRITE_5M + WRITE_1H });
    charged.push({
      route: 'anthropic stream',
      uncached: delta.input_tokens,
      output: delta.output_tokens,
      costNano: BigInt(delta.cost_nano_usd),
    });

    const chatBody = { model: MODEL, max_completion_tokens: 40, messages: [{ role: 'user', content: LONG_PROMPT }] };
    const completion = JSON.parse((await post('/v1/chat/completions', key, chatBody)).text);
    expect(completion.usage.prompt_tokens_details).toMatchObject({
      cached_tokens: READ,
      cache_write_tokens: WRITE_5M + WRITE_1H,
    });
    charged.push({
      route: 'chat',
      uncached: completion.usage.prompt_tokens - CACHED,
      output: completion.usage.completion_tokens,
      costNano: BigInt(completion.usage.cost_nano_usd),
    });

    const chatStream = sseData(
      (
        await post('/v1/chat/completions', key, {
          ...chatBody,
          stream: true,
          stream_options: { include_usage: true },
        })
      ).text,
    );
    const chatUsage = chatStream.find((chunk) => chunk.usage)!.usage;
    expect(chatUsage.prompt_tokens_details).toMatchObject({ cached_tokens: READ });
    charged.push({
      route: 'chat stream',
      uncached: chatUsage.prompt_tokens - CACHED,
      output: chatUsage.completion_tokens,
      costNano: BigInt(chatUsage.cost_nano_usd),
    });

    const responsesBody = { model: MODEL, max_output_tokens: 40, input: LONG_PROMPT };
    const response = JSON.parse((await post('/v1/responses', key, responsesBody)).text);
    expect(response.usage.input_tokens_details).toMatchObject({ cached_tokens: READ });
    charged.push({
      route: 'responses',
      uncached: response.usage.input_tokens - CACHED,
      output: response.usage.output_tokens,
      costNano: BigInt(response.usage.cost_nano_usd),
    });

    const responsesStream = sseData((await post('/v1/responses', key, { ...responsesBody, stream: true })).text);
    const completed = responsesStream.find((event) => event.type === 'response.completed').response.usage;
    expect(completed.input_tokens_details).toMatchObject({ cached_tokens: READ });
    charged.push({
      route: 'responses stream',
      uncached: completed.input_tokens - CACHED,
      output: completed.output_tokens,
      costNano: BigInt(completed.cost_nano_usd),
    });

    const geminiBody = {
      contents: [{ role: 'user', parts: [{ text: LONG_PROMPT }] }],
      generationConfig: { maxOutputTokens: 40 },
    };
    const geminiHeaders = { 'x-goog-api-key': key };
    const generated = JSON.parse(
      (await post(`/v1beta/models/${MODEL}:generateContent`, key, geminiBody, geminiHeaders)).text,
    );
    expect(generated.usageMetadata).toMatchObject({ cachedContentTokenCount: READ });
    charged.push({
      route: 'gemini',
      uncached: generated.usageMetadata.promptTokenCount - CACHED,
      output: generated.usageMetadata.candidatesTokenCount + (generated.usageMetadata.thoughtsTokenCount ?? 0),
      costNano: BigInt(generated.usageMetadata.cost_nano_usd),
    });

    const geminiStream = sseData(
      (await post(`/v1beta/models/${MODEL}:streamGenerateContent?alt=sse`, key, geminiBody, geminiHeaders)).text,
    );
    const last = geminiStream.at(-1).usageMetadata;
    expect(last).toMatchObject({ cachedContentTokenCount: READ });
    charged.push({
      route: 'gemini stream',
      uncached: last.promptTokenCount - CACHED,
      output: last.candidatesTokenCount + (last.thoughtsTokenCount ?? 0),
      costNano: BigInt(last.cost_nano_usd),
    });
    return charged;
  }

  it('charges reads, 5-minute and 1-hour writes at their own prices on every route, and records the split', async () => {
    const email = `cache-${database}-${Date.now()}@example.com`;
    const { accountId, key } = await harness.createAccountWithKey(email, 'enterprise');
    const funded = parseUsd('10');
    await harness.gateway.storage.billing.credit({
      accountId,
      kind: 'topup',
      amountNano: funded,
      idempotencyKey: `t-${accountId}`,
      note: null,
      at: Date.now(),
    });

    const charged = await sendOnEveryRoute(key);
    for (const { route, uncached, output, costNano } of charged) {
      expect(uncached, route).toBeGreaterThan(0);
      expect(costNano, route).toBe(expectedCost(uncached, output));
    }
    const total = charged.reduce((sum, { costNano }) => sum + costNano, 0n);
    expect((await harness.gateway.storage.billing.balance(accountId))?.balanceNano).toBe(funded - total);

    // The usage records: each with the split and the charge its reply reported.
    const records = await harness.gateway.storage.usage.listByAccount(accountId, 20);
    expect(records).toHaveLength(charged.length);
    for (const record of records) {
      expect(record).toMatchObject({
        model: MODEL,
        cacheReadTokens: READ,
        cacheWriteTokens: WRITE_5M + WRITE_1H,
        cacheWrite1hTokens: WRITE_1H,
      });
      expect(record.costNano).toBe(expectedCost(record.inputTokens, record.outputTokens));
    }
    expect(records.map((record) => record.costNano).sort()).toEqual(charged.map((item) => item.costNano).sort());

    // The ledger: one usage line per request, summing to the balance's drop.
    const ledger = await fetch(`${harness.gateway.url}/v1/account/ledger?limit=50`, {
      headers: { authorization: `Bearer ${key}` },
    }).then((reply) => reply.json() as Promise<any>);
    const usageLines = ledger.data.filter((entry: { kind: string }) => entry.kind === 'usage');
    expect(usageLines).toHaveLength(charged.length);
    expect(
      usageLines.reduce((sum: bigint, entry: { amount_nano_usd: string }) => sum + BigInt(entry.amount_nano_usd), 0n),
    ).toBe(-total);

    // The usage API.
    const usage = await fetch(`${harness.gateway.url}/v1/usage/requests?limit=20`, {
      headers: { authorization: `Bearer ${key}` },
    }).then((reply) => reply.json() as Promise<any>);
    for (const row of usage.data) {
      expect(row).toMatchObject({
        cache_read_tokens: READ,
        cache_write_tokens: 3_000,
        cache_write_1h_tokens: WRITE_1H,
      });
    }

    // The dashboard: the ledger line says how much was written for an hour, the request view and the rollup count it.
    const dashboard = new DashboardClient(harness.gateway.url);
    expect((await dashboard.login(email, PASSWORD)).status).toBe(200);
    const dashboardLedger = (await dashboard.get('/api/billing/ledger')).json;
    const lines = dashboardLedger.entries.filter((entry: { kind: string }) => entry.kind === 'usage');
    expect(lines).toHaveLength(charged.length);
    for (const line of lines) {
      expect(line.usage).toMatchObject({
        cacheReadTokens: READ,
        cacheWriteTokens: 3_000,
        cacheWrite1hTokens: WRITE_1H,
      });
      expect(line.description).toContain('13,000 cached (1,000 written for 1h)');
    }
    const requests = (await dashboard.get('/api/usage/requests')).json.requests;
    expect(requests).toHaveLength(charged.length);
    for (const request of requests) expect(request).toMatchObject({ cacheWrite1hTokens: WRITE_1H });
    const daily = (await dashboard.get('/api/usage/daily?days=7')).json;
    expect(daily.byModel).toMatchObject([
      { model: MODEL, cacheReadTokens: READ * 8, cacheWriteTokens: 3_000 * 8, cacheWrite1hTokens: WRITE_1H * 8 },
    ]);
    const csv = (await dashboard.get('/api/usage/export.csv?days=7')).text.trim().split('\r\n');
    expect(csv[0]!.split(',').at(-1)).toBe('cache_write_1h_tokens');
    expect(csv.slice(1).every((line) => line.split(',').at(-1) === String(WRITE_1H))).toBe(true);
    expect(await harness.gateway.storage.billing.verifyLedger()).toEqual([]);
  });
  it('holds a request with a 1-hour breakpoint at the 1-hour price: refused just below, charged in full just above', async () => {
    const system = 'You review the billing code of a toll road operator, line by line. '.repeat(300);
    /** The same prompt cached for `ttl`, the simulator writing all of it to the cache for that long. */
    const body = (ttl: '5m' | '1h') => ({
      model: MODEL,
      max_tokens: 10,
      system: [{ type: 'text', text: system, cache_control: { type: 'ephemeral', ttl } }],
      messages: [
        {
          role: 'user',
          content: `Review it. [[sim words=3 ${ttl === '1h' ? 'cache-write-1h' : 'cache-write'}=1000000]]`,
        },
      ],
    });
    const send = (key: string, ttl: '5m' | '1h') =>
      fetch(`${harness.gateway.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
        body: JSON.stringify(body(ttl)),
      });
    const accountWith = async (nano: bigint) => {
      const created = await harness.createAccountWithKey(undefined, 'enterprise');
      if (nano > 0n)
        await harness.gateway.storage.billing.credit({
          accountId: created.accountId,
          kind: 'topup',
          amountNano: nano,
          idempotencyKey: `t-${created.accountId}`,
          note: null,
          at: Date.now(),
        });
      return created;
    };
    /** What the prompt alone needs, from the refusal of an empty account (the tokenizer's count at the hold's price). */
    const promptNeeds = async (ttl: '5m' | '1h') => {
      const refused = await send((await accountWith(0n)).key, ttl);
      expect(refused.status).toBe(403);
      const message: string = ((await refused.json()) as any).error.message;
      return parseUsd(/needs \$([0-9.]+) to start \(its prompt alone/.exec(message)![1]!);
    };
    const needs1h = await promptNeeds('1h');
    const needs5m = await promptNeeds('5m');
    // Whole prompt tokens at 6,000 and at 3,750 nano-USD (the two prompts differ only in their directive's length).
    expect(needs1h % 6_000n).toBe(0n);
    expect(needs5m % 3_750n).toBe(0n);
    expect(needs1h / 6_000n - needs5m / 3_750n).toBeLessThan(10n);
    const outputHold = 10n * 15_000n;

    // Enough for the prompt as 5-minute writes and its whole output, short of the prompt at the 1-hour price and one
    // output token: the 1-hour request is refused (nothing held, nothing sent), the 5-minute one runs.
    const between = await accountWith(needs5m + outputHold + 1n);
    expect(needs5m + outputHold + 1n < needs1h + 15_000n).toBe(true);
    const refused = await send(between.key, '1h');
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as any).error.type).toBe('billing_error');
    expect(await harness.gateway.storage.usage.listByAccount(between.accountId, 5)).toEqual([]);
    expect((await send(between.key, '5m')).status).toBe(200);

    // One nano-dollar above the 1-hour hold: admitted; the vendor writes the whole prompt for an hour, all of it billed.
    const funded = needs1h + outputHold + 1n;
    const above = await accountWith(funded);
    const reply = await send(above.key, '1h');
    expect(reply.status).toBe(200);
    const { usage } = (await reply.json()) as any;
    expect(usage).toMatchObject({ input_tokens: 0, cache_read_input_tokens: 0 });
    expect(usage.cache_creation).toEqual({
      ephemeral_5m_input_tokens: 0,
      ephemeral_1h_input_tokens: usage.cache_creation_input_tokens,
    });
    const charge = BigInt(usage.cache_creation_input_tokens) * 6_000n + BigInt(usage.output_tokens) * 15_000n;
    expect(BigInt(usage.cost_nano_usd)).toBe(charge);
    const [record] = await harness.gateway.storage.usage.listByAccount(above.accountId, 1);
    expect(record).toMatchObject({ cacheWrite1hTokens: usage.cache_creation_input_tokens, costNano: charge });
    expect(record!.unbilledNano).toBe(0n);
    expect((await harness.gateway.storage.billing.balance(above.accountId))?.balanceNano).toBe(funded - charge);
  });
});
