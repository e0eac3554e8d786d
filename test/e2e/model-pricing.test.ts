/**
 * Every model listing carries what a model costs and can do: OpenAI's list (`GET /v1/models`, `/v1/models/{id}`)
 * with a `pricing` object and capabilities the OpenAI SDK still parses, Anthropic's `ModelInfo` with its
 * capabilities, Google's `Model` with its prices in the description, and the dashboard's `/api/models`. The listed
 * prices are the ones a request is billed at, to the nano-dollar.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import { DashboardClient, PASSWORD } from '../helpers/dashboard-client.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

interface ListedPricing {
  currency: string;
  unit: string;
  input: string;
  output: string;
  cache_read: string;
  cache_write: string;
  cache_write_1h: string;
  web_search_per_request?: string;
}

interface ListedModel extends OpenAI.Models.Model {
  pricing: ListedPricing;
  capabilities: { tools: boolean; images: boolean; reasoning: boolean; structured_output: boolean };
  context_window: number;
  max_output_tokens: number;
}

let harness: TestGateway;
let key: string;
let email: string;
let accountId: string;
let openai: OpenAI;

beforeAll(async () => {
  // A configured price replaces the listed one: the listing must show the price in force, not the built-in one.
  harness = await startTestGateway({
    env: { FREE_TOKENS_PER_DAY: '0' },
    yaml: 'models:\n  delta-v4-flash: { prices: { input: "0.123", output: "7" } }\n',
  });
  email = `pricing-${Date.now()}@example.com`;
  ({ key, accountId } = await harness.createAccountWithKey(email));
  openai = new OpenAI({ baseURL: harness.openaiBaseUrl, apiKey: key, maxRetries: 0 });
}, 60_000);

afterAll(async () => {
  await harness?.close();
});

describe("OpenAI's model list", () => {
  it('lists every model with exact decimal prices and capabilities, and the SDK parses it', async () => {
    const listed: ListedModel[] = [];
    for await (const model of openai.models.list()) listed.push(model as ListedModel);
    expect(listed).toHaveLength(11);
    for (const model of listed) {
      expect(model.object).toBe('model');
      for (const field of ['input', 'output', 'cache_read', 'cache_write', 'cache_write_1h'] as const)
        expect(model.pricing[field]).toMatch(/^\d+(\.\d+)?$/);
    }
    const sonnet = listed.find((model) => model.id === 'alpha-sonnet-5')!;
    expect(sonnet.pricing).toEqual({
      currency: 'USD',
      unit: 'per_million_tokens',
      input: '3',
      output: '15',
      cache_read: '0.3',
      cache_write: '3.75',
      cache_write_1h: '6',
      web_search_per_request: '0.01',
    });
    expect(sonnet.capabilities).toEqual({ tools: true, images: true, reasoning: true, structured_output: true });
    expect(sonnet).toMatchObject({ context_window: 200_000, max_output_tokens: 64_000, family: 'alpha' });
    // No write premium at OpenAI: a cache write is billed, and listed, as input.
    expect(listed.find((model) => model.id === 'o4-mini')!.pricing).toMatchObject({
      input: '1.1',
      output: '4.4',
      cache_read: '0.275',
      cache_write: '1.1',
      cache_write_1h: '1.1',
    });
    const flash = listed.find((model) => model.id === 'delta-v4-flash')!;
    expect(flash.pricing).toMatchObject({ input: '0.123', output: '7', cache_read: '0.014' });
    expect(flash.pricing.web_search_per_request).toBeUndefined();
    expect(flash.capabilities).toEqual({ tools: true, images: false, reasoning: true, structured_output: false });
  });

  it('gives one model the same way', async () => {
    const model = (await openai.models.retrieve('gamma-3.5-flash')) as ListedModel;
    expect(model.pricing).toMatchObject({ input: '0.3', output: '2.5', cache_read: '0.03' });
    expect(model.capabilities.images).toBe(true);
  });

  it('lists only what a key with a model allowlist may use', async () => {
    const created = await harness.gateway.keys.create(accountId, accountId, {
      name: 'gamma only',
      permissions: { scopes: null, models: ['gamma'], spendLimit: null, rateLimit: null },
    });
    const restricted = new OpenAI({ baseURL: harness.openaiBaseUrl, apiKey: created.secret, maxRetries: 0 });
    const ids: string[] = [];
    for await (const model of restricted.models.list()) {
      ids.push(model.id);
      expect((model as ListedModel).pricing.input).toMatch(/^\d/);
    }
    expect(ids.sort()).toEqual(['gamma-2.5-pro', 'gamma-3.5-flash']);
  });

  it('lists the prices a request is billed at, to the nano-dollar', async () => {
    await harness.gateway.storage.billing.credit({
      accountId,
      kind: 'topup',
      amountNano: parseUsd('5'),
      idempotencyKey: `pricing-${accountId}`,
      note: null,
      at: Date.now(),
    });
    const model = (await openai.models.retrieve('delta-v4-flash')) as ListedModel;
    const reply = await openai.chat.completions.create({
      model: 'delta-v4-flash',
      messages: [{ role: 'user', content: 'Count the toll booths on the bridge.' }],
      max_tokens: 40,
    });
    const usage = reply.usage!;
    const cachedTokens = usage.prompt_tokens_details?.cached_tokens ?? 0;
    // Listed per 1M tokens; billed per token: each listed price must be a whole number of nano-USD per token.
    const perToken = (usdPerMillion: string): bigint => {
      const nano = parseUsd(usdPerMillion);
      expect(nano % 1_000_000n).toBe(0n);
      return nano / 1_000_000n;
    };
    const expected =
      BigInt(usage.prompt_tokens - cachedTokens) * perToken(model.pricing.input) +
      BigInt(cachedTokens) * perToken(model.pricing.cache_read) +
      BigInt(usage.completion_tokens) * perToken(model.pricing.output);
    const records = await fetch(`${harness.openaiBaseUrl}/usage/requests?limit=5`, {
      headers: { authorization: `Bearer ${key}` },
    }).then((response) => response.json() as Promise<{ data: Array<{ cost_nano_usd: string; model: string }> }>);
    expect(records.data[0]!.model).toBe('delta-v4-flash');
    expect(BigInt(records.data[0]!.cost_nano_usd)).toBe(expected);
    expect(expected).toBeGreaterThan(0n);
  });
});

describe("Anthropic's and Google's model shapes", () => {
  it("fills Anthropic's capabilities, as the newest SDK declares them", async () => {
    const anthropic = new Anthropic({ baseURL: harness.gateway.url, apiKey: key, maxRetries: 0 });
    const opus = await anthropic.models.retrieve('alpha-opus-4-8');
    expect(opus.capabilities).toMatchObject({
      image_input: { supported: true },
      structured_outputs: { supported: true },
      thinking: { supported: true, types: { enabled: { supported: true } } },
      server_tools: { web_search: { supported: true } },
      batch: { supported: false },
    });
    const page = await anthropic.models.list();
    const reasoner = page.data.find((model) => model.id === 'delta-r1')!;
    expect(reasoner.capabilities).toMatchObject({
      image_input: { supported: false },
      pdf_input: { supported: false },
      structured_outputs: { supported: false },
      server_tools: { supported: false },
    });
  });

  it("states Google's prices in the description, the only place its shape has", async () => {
    const reply = await fetch(`${harness.gateway.url}/v1beta/models/gamma-2.5-pro`, {
      headers: { 'x-goog-api-key': key },
    });
    const model = (await reply.json()) as { description: string; thinking: boolean };
    expect(model.description).toContain('$1.00 in / $10.00 out per 1M tokens');
    expect(model.thinking).toBe(true);
  });
});

describe("the dashboard's model list", () => {
  it('gives the signed-in user the same prices as the API, and nothing to a visitor', async () => {
    const dashboard = new DashboardClient(harness.gateway.url);
    await dashboard.open();
    expect((await dashboard.get('/api/models')).status).toBe(401);
    expect((await dashboard.login(email, PASSWORD)).status).toBe(200);
    const reply = await dashboard.get('/api/models');
    expect(reply.status).toBe(200);
    expect(reply.json.models).toHaveLength(11);
    const listed: ListedModel[] = [];
    for await (const model of openai.models.list()) listed.push(model as ListedModel);
    for (const model of reply.json.models) {
      const api = listed.find((entry) => entry.id === model.id)!;
      expect(model.pricing).toEqual({
        inputUsd: api.pricing.input,
        outputUsd: api.pricing.output,
        cacheReadUsd: api.pricing.cache_read,
        cacheWriteUsd: api.pricing.cache_write,
        cacheWrite1hUsd: api.pricing.cache_write_1h,
        webSearchUsd: api.pricing.web_search_per_request ?? null,
      });
      expect(model.contextWindow).toBe(api.context_window);
    }
  });
});
