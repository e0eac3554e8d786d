import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import { ModelCatalog } from '../../src/catalog/model-catalog.js';
import { MODEL_DEFINITIONS } from '../../src/catalog/models.js';
import type { UsageRecord } from '../../src/storage/types.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const catalog = new ModelCatalog();
const MODELS = MODEL_DEFINITIONS.map((definition) => definition.id);

/** tokens × price for an OpenAI-shaped usage, from the catalog's prices: what the test expects to be billed. */
function expectedFromOpenAI(
  model: string,
  usage: {
    prompt_tokens: number;
    completion_tokens: number;
    prompt_tokens_details?: { cached_tokens?: number; cache_write_tokens?: number } | null;
  },
): bigint {
  const prices = catalog.resolve(model).prices;
  const cached = usage.prompt_tokens_details?.cached_tokens ?? 0;
  const written = usage.prompt_tokens_details?.cache_write_tokens ?? 0;
  return (
    BigInt(usage.prompt_tokens - cached - written) * prices.input +
    BigInt(cached) * prices.cacheRead +
    BigInt(written) * prices.cacheWrite +
    BigInt(usage.completion_tokens) * prices.output
  );
}

function expectedFromAnthropic(
  model: string,
  usage: {
    input_tokens: number;
    output_tokens: number;
    cache_read_input_tokens?: number | null;
    cache_creation_input_tokens?: number | null;
  },
): bigint {
  const prices = catalog.resolve(model).prices;
  return (
    BigInt(usage.input_tokens) * prices.input +
    BigInt(usage.cache_read_input_tokens ?? 0) * prices.cacheRead +
    BigInt(usage.cache_creation_input_tokens ?? 0) * prices.cacheWrite +
    BigInt(usage.output_tokens) * prices.output
  );
}

type CostUsage = { cost?: string; cost_nano_usd?: string };

describe.each([{ database: 'sqlite' }, { database: 'postgres' }])('billing on $database', ({ database }) => {
  let harness: TestGateway;

  beforeAll(async () => {
    harness = await startTestGateway({ postgres: database === 'postgres', env: { FREE_TOKENS_PER_DAY: '0' } });
  });

  afterAll(async () => {
    await harness?.close();
  });

  async function fundedClients(usd: string) {
    const { key, accountId } = await harness.createAccountWithKey(undefined, 'enterprise');
    await harness.gateway.storage.billing.credit({
      accountId,
      kind: 'topup',
      amountNano: parseUsd(usd),
      idempotencyKey: `t-${accountId}`,
      note: null,
      at: Date.now(),
    });
    return {
      accountId,
      key,
      openai: new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 }),
      anthropic: new Anthropic({ apiKey: key, baseURL: harness.gateway.url, maxRetries: 0 }),
    };
  }

  async function balance(accountId: string): Promise<bigint> {
    return (await harness.gateway.storage.billing.balance(accountId))!.balanceNano;
  }

  it('charges every model exactly tokens × price, stream and non-stream, through both client APIs', async () => {
    const { accountId, openai, anthropic } = await fundedClients('50');
    let expectedTotal = 0n;
    for (const model of MODELS) {
      const content = `Price check for ${model} [[sim cache-read=8]]`;
      const { data: whole, response } = await openai.chat.completions
        .create({ model, messages: [{ role: 'user', content }], max_completion_tokens: 60 })
        .withResponse();
      const wholeCost = expectedFromOpenAI(model, whole.usage!);
      expect(BigInt((whole.usage as CostUsage).cost_nano_usd!)).toBe(wholeCost);
      expect(parseUsd(response.headers.get('x-tollgate-cost-usd')!)).toBe(wholeCost);

      let streamedUsage: (OpenAI.CompletionUsage & CostUsage) | undefined;
      const stream = await openai.chat.completions.create({
        model,
        messages: [{ role: 'user', content }],
        max_completion_tokens: 60,
        stream: true,
        stream_options: { include_usage: true },
      });
      for await (const chunk of stream) if (chunk.usage) streamedUsage = chunk.usage;
      expect(BigInt(streamedUsage!.cost_nano_usd!)).toBe(expectedFromOpenAI(model, streamedUsage!));
      expect(BigInt(streamedUsage!.cost_nano_usd!)).toBe(wholeCost); // same reply, same price

      const message = await anthropic.messages.create({ model, max_tokens: 60, messages: [{ role: 'user', content }] });
      const messageCost = expectedFromAnthropic(model, message.usage);
      expect(BigInt((message.usage as CostUsage).cost_nano_usd!)).toBe(messageCost);
      let deltaUsage: (Anthropic.MessageDeltaUsage & CostUsage) | undefined;
      for await (const event of await anthropic.messages.create({
        model,
        max_tokens: 60,
        stream: true,
        messages: [{ role: 'user', content }],
      })) {
        if (event.type === 'message_delta') deltaUsage = event.usage;
      }
      expect(BigInt(deltaUsage!.cost_nano_usd!)).toBe(messageCost);
      expectedTotal += 2n * wholeCost + 2n * messageCost;
    }
    expect(await balance(accountId)).toBe(parseUsd('50') - expectedTotal);
    const rows = await harness.gateway.storage.usage.listByAccount(accountId, 100);
    expect(rows).toHaveLength(MODELS.length * 4);
    expect(rows.reduce((sum, row) => sum + row.costNano, 0n)).toBe(expectedTotal);
    expect(await harness.gateway.storage.billing.verifyLedger()).toEqual([]);
  });

  it('200 concurrent requests on a balance for about 50: never below zero, each admitted settled once, the rest 403', async () => {
    const { accountId, key } = await fundedClients('0.0425');
    const send = () =>
      fetch(`${harness.openaiBaseUrl}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'beta-5.4',
          messages: [{ role: 'user', content: 'concurrency [[sim words=10]]' }],
          max_completion_tokens: 50,
        }),
      });
    const responses = await Promise.all(Array.from({ length: 200 }, send));
    const statuses = responses.map((response) => response.status);
    expect(statuses.every((status) => status === 200 || status === 403)).toBe(true);
    const admitted = statuses.filter((status) => status === 200).length;
    expect(admitted).toBeGreaterThanOrEqual(40);
    expect(statuses.filter((status) => status === 403).length).toBeGreaterThan(0);
    for (const response of responses.filter((candidate) => candidate.status === 403).slice(0, 3)) {
      const body = (await response.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe('insufficient_balance');
      // What the request needed to start, the balance, and what the requests in flight hold
      // (docs/architecture.md#holds-that-grow).
      expect(body.error.message).toMatch(
        /^Insufficient balance: this request needs \$[\d.]+ to start \(its prompt( alone)? \(about \d+ input tokens\)( and a first slice of 50 output tokens)?\), but the account has \$[\d.]+ available and no free tokens left today\. The balance is \$[\d.]+; (1 request in flight holds \$[\d.]+ of it until it finishes|\d+ requests in flight hold \$[\d.]+ of it until they finish|no request of the account is in flight)\./,
      );
    }
    const state = (await harness.gateway.storage.billing.balance(accountId))!;
    expect(state.balanceNano >= 0n).toBe(true);
    expect(state.reservedNano).toBe(0n);
    // Served whole, or cut as a length stop where the balance refused the rest of the reply
    // (docs/architecture.md#holds-that-grow).
    const replies = await Promise.all(
      responses
        .filter((response) => response.status === 200)
        .map(async (response) => (await response.json()) as { choices: Array<{ finish_reason: string }> }),
    );
    const cut = replies.filter((reply) => reply.choices[0]!.finish_reason === 'length').length;
    expect(cut + replies.filter((reply) => reply.choices[0]!.finish_reason === 'stop').length).toBe(admitted);
    const rows = await harness.gateway.storage.usage.listByAccount(accountId, 500);
    expect(rows.filter((row) => row.status === 'ok')).toHaveLength(admitted - cut);
    expect(rows.filter((row) => row.status === 'slice_refused')).toHaveLength(cut);
    expect(new Set(rows.map((row) => row.requestId)).size).toBe(rows.length);
    expect(parseUsd('0.0425') - state.balanceNano).toBe(rows.reduce((sum, row) => sum + row.costNano, 0n));
    expect(await harness.gateway.storage.billing.verifyLedger()).toEqual([]);
  });

  it('a vendor failure before any output costs nothing; the hold is released', async () => {
    const { accountId, openai } = await fundedClients('1');
    await expect(
      openai.chat.completions.create({
        model: 'beta-5.4',
        messages: [{ role: 'user', content: 'x [[sim fault=error status=500]]' }],
      }),
    ).rejects.toBeInstanceOf(OpenAI.InternalServerError);
    expect(await harness.gateway.storage.billing.balance(accountId)).toMatchObject({
      balanceNano: parseUsd('1'),
      reservedNano: 0n,
    });
    expect(await harness.gateway.storage.usage.listByAccount(accountId, 5)).toMatchObject([
      { status: 'upstream_error', costNano: 0n },
    ]);
  });

  it('a stream the vendor breaks is charged for what was delivered', async () => {
    const { accountId, openai } = await fundedClients('1');
    const stream = await openai.chat.completions.create({
      model: 'beta-5.4',
      messages: [{ role: 'user', content: 'story [[sim fault=disconnect-mid-stream after=4 words=60]]' }],
      stream: true,
    });
    await expect(
      (async () => {
        for await (const _chunk of stream) void _chunk;
      })(),
    ).rejects.toThrow();
    const [row] = await harness.gateway.storage.usage.listByAccount(accountId, 5);
    expect(row).toMatchObject({ status: 'upstream_error' });
    expect(row!.outputTokens).toBeGreaterThan(0);
    const prices = catalog.resolve('beta-5.4').prices;
    expect(row!.costNano).toBe(BigInt(row!.inputTokens) * prices.input + BigInt(row!.outputTokens) * prices.output);
    expect(await harness.gateway.storage.billing.balance(accountId)).toMatchObject({
      balanceNano: parseUsd('1') - row!.costNano,
      reservedNano: 0n,
    });
  });

  it('a client that leaves mid-stream pays for the prompt and what it received, not the whole reply', async () => {
    const { accountId, openai } = await fundedClients('1');
    const full = await openai.chat.completions.create({
      model: 'beta-5.4',
      messages: [{ role: 'user', content: 'long one [[sim words=200]]' }],
    });
    const controller = new AbortController();
    const stream = await openai.chat.completions.create(
      {
        model: 'beta-5.4',
        messages: [{ role: 'user', content: 'long one [[sim words=200 chunk-delay=20]]' }],
        stream: true,
      },
      { signal: controller.signal },
    );
    let chunks = 0;
    for await (const _chunk of stream) if (++chunks === 5) controller.abort();
    let row: UsageRecord | undefined;
    for (let attempt = 0; attempt < 50 && row === undefined; attempt++) {
      row = (await harness.gateway.storage.usage.listByAccount(accountId, 5)).find(
        (candidate) => candidate.status === 'client_disconnected',
      );
      if (row === undefined) await new Promise((resolve) => setTimeout(resolve, 40));
    }
    expect(row!.outputTokens).toBeGreaterThan(0);
    expect(row!.outputTokens).toBeLessThan(full.usage!.completion_tokens);
    expect(row!.costNano > 0n).toBe(true);
    const state = (await harness.gateway.storage.billing.balance(accountId))!;
    expect(state.reservedNano).toBe(0n);
    expect(await harness.gateway.storage.billing.verifyLedger()).toEqual([]);
  });
});

describe('the free daily allowance', () => {
  let harness: TestGateway;
  // The gateway's wall clock, a minute before midnight UTC; it stands still there until the test moves it.
  let clock = Date.UTC(2026, 10, 22, 23, 59, 0);

  beforeAll(async () => {
    harness = await startTestGateway({ env: { FREE_TOKENS_PER_DAY: '60' }, fakeClockMs: clock });
  });

  afterAll(async () => {
    await harness?.close();
  });

  it('a request straddling the allowance pays only for its paid part, and the allowance resets at 00:00 UTC', async () => {
    const { key, accountId } = await harness.createAccountWithKey();
    await harness.gateway.storage.billing.credit({
      accountId,
      kind: 'topup',
      amountNano: parseUsd('1'),
      idempotencyKey: 'straddle',
      note: null,
      at: clock,
    });
    const openai = new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
    const prices = catalog.resolve('beta-5.4').prices;
    const first = await openai.chat.completions.create({
      model: 'beta-5.4',
      messages: [{ role: 'user', content: 'free then paid [[sim words=30]]' }],
      max_completion_tokens: 80,
    });
    const usage = first.usage!;
    expect(usage.prompt_tokens + usage.completion_tokens).toBeGreaterThan(60);
    // 60 free tokens cover the prompt first, then the start of the output.
    const freeInput = Math.min(60, usage.prompt_tokens);
    const freeOutput = 60 - freeInput;
    const expected =
      BigInt(usage.prompt_tokens - freeInput) * prices.input +
      BigInt(usage.completion_tokens - freeOutput) * prices.output;
    expect(BigInt((usage as CostUsage).cost_nano_usd!)).toBe(expected);

    const spent = await openai.chat.completions.create({
      model: 'beta-5.4',
      messages: [{ role: 'user', content: 'all paid [[sim words=5]]' }],
      max_completion_tokens: 20,
    });
    expect(BigInt((spent.usage as CostUsage).cost_nano_usd!)).toBe(expectedFromOpenAI('beta-5.4', spent.usage!));

    clock += 2 * 60_000; // past midnight UTC
    harness.setClock(clock);
    const account = await fetch(`${harness.gateway.url}/v1/account`, { headers: { authorization: `Bearer ${key}` } });
    expect(((await account.json()) as { free_allowance: { left_today: number } }).free_allowance.left_today).toBe(60);
    const nextDay = await openai.chat.completions.create({
      model: 'beta-5.4',
      messages: [{ role: 'user', content: 'hi' }],
      max_completion_tokens: 5,
    });
    expect(nextDay.usage!.prompt_tokens + nextDay.usage!.completion_tokens).toBeLessThanOrEqual(60);
    expect((nextDay.usage as CostUsage).cost_nano_usd).toBe('0');
  });

  it('an empty account gets 403 once the allowance is used, saying what the balance covers, on both APIs', async () => {
    const { key } = await harness.createAccountWithKey();
    const openai = new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
    await openai.chat.completions.create({
      model: 'beta-5.4',
      messages: [{ role: 'user', content: 'use it up [[sim words=40]]' }],
    });
    const viaOpenAI = (await openai.chat.completions
      .create({ model: 'beta-5.4', messages: [{ role: 'user', content: 'more' }] })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(viaOpenAI).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(viaOpenAI.code).toBe('insufficient_balance');
    expect(viaOpenAI.message).toMatch(
      /Insufficient balance: this request needs \$[\d.]+ to start .*, but the account has \$0 available and \d+ free tokens left today\. The balance is \$0; no request of the account is in flight\./,
    );
    const anthropic = new Anthropic({ apiKey: key, baseURL: harness.gateway.url, maxRetries: 0 });
    const viaAnthropic = (await anthropic.messages
      .create({ model: 'alpha-haiku-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'more' }] })
      .catch((e: unknown) => e)) as InstanceType<typeof Anthropic.APIError>;
    expect(viaAnthropic).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect((viaAnthropic.error as { error: { type: string; message: string } }).error.message).toMatch(
      /needs \$[\d.]+ to start .*The balance is \$0;/,
    );
  });
});
