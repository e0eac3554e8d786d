/**
 * Vendor faults seen through `/v1/responses` (the official openai SDK as the client), on one model of each family:
 * the same retries, errors and billing as the other two routes (upstream-faults.test.ts). Before the first byte: an
 * HTTP error in OpenAI's shape, nothing charged; a fault a retry gets past: the reply, charged once; after the stream
 * started: an `error` event and `response.failed`, the input and the delivered output charged.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import { countTextTokens } from '../../src/canonical/count-tokens.js';
import { ModelCatalog } from '../../src/catalog/model-catalog.js';
import { resilienceYaml } from '../helpers/resilience-yaml.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const MODELS = ['alpha-haiku-4-5', 'beta-5.4', 'gamma-3.5-flash', 'delta-v4-flash'] as const;
const FUNDS = parseUsd('10');
const catalog = new ModelCatalog();
/** Short vendor timeouts and two attempts, so the faults resolve within a test. */
const YAML = resilienceYaml();

let harness: TestGateway;

beforeAll(async () => {
  harness = await startTestGateway({ yaml: YAML, env: { FREE_TOKENS_PER_DAY: '0' } });
}, 60_000);

afterAll(async () => {
  await harness?.close();
});

async function funded() {
  const { key, accountId } = await harness.createAccountWithKey(undefined, 'enterprise');
  await harness.gateway.storage.billing.credit({
    accountId,
    kind: 'topup',
    amountNano: FUNDS,
    idempotencyKey: `t-${accountId}`,
    note: null,
    at: Date.now(),
  });
  return { client: new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 }), accountId };
}

/** The request's one usage row; nothing held; balance = funds − its cost; the ledger balanced. */
async function billed(accountId: string) {
  const rows = await harness.gateway.storage.usage.listByAccount(accountId, 10);
  expect(rows).toHaveLength(1);
  expect(rows[0]!.route).toBe('/v1/responses');
  const balance = (await harness.gateway.storage.billing.balance(accountId))!;
  expect(balance.reservedNano).toBe(0n);
  expect(balance.balanceNano).toBe(FUNDS - rows[0]!.costNano);
  expect((await harness.gateway.storage.billing.verifyLedger()).filter((row) => row.accountId === accountId)).toEqual(
    [],
  );
  return rows[0]!;
}

describe.each(MODELS)('vendor faults on %s through /v1/responses', (model) => {
  it("500 on every attempt → 500 in OpenAI's shape; nothing charged", async () => {
    const { client, accountId } = await funded();
    await expect(client.responses.create({ model, input: 'Hello [[sim error status=500]]' })).rejects.toMatchObject({
      status: 500,
      error: { type: 'server_error' },
    });
    const row = await billed(accountId);
    expect(row).toMatchObject({ status: 'upstream_error', costNano: 0n });
  });

  it('500 once → retried; the reply, charged once', async () => {
    const { client, accountId } = await funded();
    const stream = client.responses.stream({
      model,
      input: `Hello [[sim error status=500 times=1]] ${model}`,
      store: false,
    });
    const response = await stream.finalResponse();
    expect(response.status).toBe('completed');
    const row = await billed(accountId);
    expect(row.status).toBe('ok');
    expect(row.costNano).toBeGreaterThan(0n);
  });

  it('429 with a long retry-after → 429 with retry-after; nothing charged', async () => {
    const { client, accountId } = await funded();
    const error = await client.responses
      .create({ model, input: 'Hello [[sim rate-limit retry-after=30]]' })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(429);
    expect((error as InstanceType<typeof OpenAI.APIError>).headers?.get('retry-after')).toBe('30');
    expect((await billed(accountId)).costNano).toBe(0n);
  });

  it('a stall mid-stream → the SDK raises the error event; the input and the delivered output charged', async () => {
    const { client, accountId } = await funded();
    const stream = client.responses.stream({
      model,
      input: 'Tell me more [[sim stall-mid-stream delay=forever after=3 words=40]]',
      store: false,
    });
    let delivered = '';
    const types: string[] = [];
    const failure = await (async () => {
      for await (const event of stream) {
        types.push(event.type);
        if (event.type === 'response.output_text.delta') delivered += event.delta;
      }
      return stream.finalResponse();
    })().catch((caught: unknown) => caught);
    // The SDK stops at the `error` event (the gateway sends `response.failed` after it, which Codex reads; see
    // openai-responses.test.ts) and rejects with it (openai 6 with the event itself, 7 as an APIError): the caller
    // gets the error, not a truncated success.
    expect(types[0]).toBe('response.created');
    expect(types.at(-1)).toBe('error');
    expect(failure).toMatchObject({ type: 'error', code: 'upstream_timeout' });
    expect(delivered.length).toBeGreaterThan(0);
    const row = await billed(accountId);
    expect(row.status).toBe('upstream_error');
    expect(row.outputTokens).toBe(countTextTokens(delivered));
    const prices = catalog.resolve(model).prices;
    expect(row.costNano).toBe(BigInt(row.inputTokens) * prices.input + BigInt(row.outputTokens) * prices.output);
  });
});
