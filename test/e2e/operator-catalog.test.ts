import { readFileSync, writeFileSync } from 'node:fs';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import type { UsageRecord } from '../../src/storage/types.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

/**
 * The operator's catalog through the built gateway: a model added to tollgate.yaml while the process runs is served
 * and billed at its configured prices on all four client protocols; an alias serves its model and the reply names
 * the model served; a retired model is refused naming its replacement; a bad edit is refused and the running catalog
 * kept. On SQLite and PostgreSQL.
 */

const BASE_YAML = `
aliases:
  claude-sonnet-latest: alpha-sonnet-5
`;

/** USD per 1M tokens of the added model: prices no listed model has, so a wrong price cannot pass. */
const ADDED_PRICES = { input: '2.20', output: '11.70' };

const ADDED_YAML = `${BASE_YAML}
models:
  alpha-sonnet-6:
    family: alpha
    upstreamModel: claude-sonnet-6
    description: added by the operator
    contextWindow: 300000
    maxOutputTokens: 32000
    prices: { input: "${ADDED_PRICES.input}", output: "${ADDED_PRICES.output}", cacheRead: "0.22", cacheWrite: "2.75" }
  delta-r1: { retired: true, replacement: delta-v4-flash }
`;

function perToken(usdPerMillion: string): bigint {
  return parseUsd(usdPerMillion) / 1_000_000n;
}

async function until<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe.each(['sqlite', 'postgres'] as const)('operator-defined models on %s', (database) => {
  let harness: TestGateway;
  let key: string;
  let accountId: string;
  let configFile: string;

  beforeAll(async () => {
    harness = await startTestGateway({
      postgres: database === 'postgres',
      yaml: BASE_YAML,
      env: { FREE_TOKENS_PER_DAY: '0' },
    });
    configFile = harness.env.TOLLGATE_CONFIG!;
    const account = await harness.createAccountWithKey(undefined, 'enterprise');
    ({ key, accountId } = account);
    await harness.gateway.storage.billing.credit({
      accountId,
      kind: 'topup',
      amountNano: parseUsd('20'),
      idempotencyKey: `t-${accountId}`,
      note: null,
      at: Date.now(),
    });
  });

  afterAll(async () => {
    await harness?.close();
  });

  async function modelIds(): Promise<string[]> {
    const response = await fetch(`${harness.gateway.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
    const body = (await response.json()) as { data: Array<{ id: string }> };
    return body.data.map((model) => model.id);
  }

  async function usageOf(requestId: string): Promise<UsageRecord> {
    return until(async () => {
      const [record] = await harness.gateway.storage.usage.findByRequestIds(accountId, [requestId]);
      return record;
    }, `the usage record of ${requestId}`);
  }

  function expectBilledAtAddedPrices(record: UsageRecord): void {
    expect(record.model).toBe('alpha-sonnet-6');
    expect(record.family).toBe('alpha');
    expect(record.inputTokens).toBeGreaterThan(0);
    expect(record.outputTokens).toBeGreaterThan(0);
    expect(record.cacheReadTokens + record.cacheWriteTokens).toBe(0);
    expect(record.costNano).toBe(
      BigInt(record.inputTokens) * perToken(ADDED_PRICES.input) +
        BigInt(record.outputTokens) * perToken(ADDED_PRICES.output),
    );
  }

  it('serves and bills a model added to the file while running, on all four client protocols', async () => {
    const before = await modelIds();
    expect(before).not.toContain('alpha-sonnet-6');
    expect(before).toContain('delta-r1');
    writeFileSync(configFile, ADDED_YAML);
    await until(async () => ((await modelIds()).includes('alpha-sonnet-6') ? true : undefined), 'the reload');
    expect(await modelIds()).not.toContain('delta-r1');

    const prompt = 'Price check of an added model [[sim prompt-cache=off words=12]]';
    const openai = new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
    const anthropic = new Anthropic({ apiKey: key, baseURL: harness.gateway.url, maxRetries: 0 });
    const balanceBefore = (await harness.gateway.storage.billing.balance(accountId))!.balanceNano;

    const chat = await openai.chat.completions
      .create({ model: 'alpha-sonnet-6', messages: [{ role: 'user', content: prompt }] })
      .withResponse();
    expect(chat.data.model).toBe('alpha-sonnet-6');
    expect(chat.response.headers.get('x-tollgate-model')).toBe('alpha-sonnet-6');

    const messages = await anthropic.messages
      .create({ model: 'alpha-sonnet-6', max_tokens: 200, messages: [{ role: 'user', content: prompt }] })
      .withResponse();
    expect(messages.data.model).toBe('alpha-sonnet-6');

    const responses = await openai.responses.create({ model: 'alpha-sonnet-6', input: prompt }).withResponse();
    expect(responses.data.model).toBe('alpha-sonnet-6');

    const gemini = await fetch(`${harness.gateway.url}/v1beta/models/alpha-sonnet-6:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': key },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: prompt }] }] }),
    });
    expect(gemini.status).toBe(200);
    expect(((await gemini.json()) as { modelVersion: string }).modelVersion).toBe('alpha-sonnet-6');

    const requestIds = [chat.response, messages.response, responses.response, gemini].map(
      (response) => response.headers.get('x-request-id')!,
    );
    let total = 0n;
    for (const requestId of requestIds) {
      const record = await usageOf(requestId);
      expectBilledAtAddedPrices(record);
      total += record.costNano;
    }
    const balanceAfter = (await harness.gateway.storage.billing.balance(accountId))!.balanceNano;
    expect(balanceBefore - balanceAfter).toBe(total);
  });

  it('refuses a retired model naming its replacement, in the client protocol; usage history keeps it', async () => {
    const openai = new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
    const error = await openai.chat.completions
      .create({ model: 'delta-r1', messages: [{ role: 'user', content: 'hi' }] })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).message).toMatch(
      /delta-r1' has been retired\. Use 'delta-v4-flash' instead/,
    );
  });

  it('serves an alias with the model it points to, named in the reply and the usage record', async () => {
    const anthropic = new Anthropic({ apiKey: key, baseURL: harness.gateway.url, maxRetries: 0 });
    const { data, response } = await anthropic.messages
      .create({ model: 'claude-sonnet-latest', max_tokens: 100, messages: [{ role: 'user', content: 'hello' }] })
      .withResponse();
    expect(data.model).toBe('alpha-sonnet-5');
    expect(response.headers.get('x-tollgate-model')).toBe('alpha-sonnet-5');
    const record = await usageOf(response.headers.get('x-request-id')!);
    expect(record.model).toBe('alpha-sonnet-5');
  });

  it('refuses a bad edit naming the entry, and keeps serving the running catalog', async () => {
    const good = readFileSync(configFile, 'utf8');
    const logged = harness.logs.length;
    writeFileSync(configFile, good.replace(`input: "${ADDED_PRICES.input}"`, 'input: "two dollars"'));
    await until(async () => {
      await harness.flushLogs();
      return harness.logs.slice(logged).find((line) => line.includes('catalog reload'));
    }, 'the refused reload');
    await harness.flushLogs();
    const refusal = harness.logs.slice(logged).find((line) => line.includes('catalog reload'))!;
    expect(refusal).toMatch(/refused, the running catalog is kept/);
    expect(refusal).toMatch(/models\.alpha-sonnet-6\.prices\.input/);

    const shadowing = `${good}\naliases:\n  alpha-sonnet-6: alpha-sonnet-5\n`.replace(BASE_YAML.trim(), '');
    const logged2 = harness.logs.length;
    writeFileSync(configFile, shadowing);
    await until(async () => {
      await harness.flushLogs();
      return harness.logs.slice(logged2).find((line) => line.includes('catalog reload'));
    }, 'the second refused reload');
    await harness.flushLogs();
    expect(harness.logs.slice(logged2).find((line) => line.includes('catalog reload'))).toMatch(
      /aliases\.alpha-sonnet-6: shadows the model/,
    );
    // Still served, at the prices that were running.
    const openai = new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
    const { response } = await openai.chat.completions
      .create({ model: 'alpha-sonnet-6', messages: [{ role: 'user', content: 'still here [[sim prompt-cache=off]]' }] })
      .withResponse();
    expectBilledAtAddedPrices(await usageOf(response.headers.get('x-request-id')!));
    writeFileSync(configFile, good);
  });
});
