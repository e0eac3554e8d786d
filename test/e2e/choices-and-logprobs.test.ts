/**
 * `n` / `candidateCount` and log probabilities reach the vendors that honour them (beta, gamma, and delta outside
 * thinking), through the official SDKs, whole and streamed; the others refuse them with a 400 naming the caller's
 * field, before anything is held or sent.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import { ModelCatalog } from '../../src/catalog/model-catalog.js';
import { AGENTS_PACKAGE_DIR, NODE_24 } from '../helpers/agents-package.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const catalog = new ModelCatalog();
let harness: TestGateway;
let openai: OpenAI;
let accountId: string;
let key: string;

beforeAll(async () => {
  // No free allowance: every token is charged, so a charge can be checked to the nano-dollar.
  harness = await startTestGateway({ env: { FREE_TOKENS_PER_DAY: '0' } });
  ({ key, accountId } = await harness.createAccountWithKey(undefined, 'enterprise'));
  await harness.gateway.storage.billing.credit({
    accountId,
    kind: 'topup',
    amountNano: parseUsd('20'),
    idempotencyKey: `t-${accountId}`,
    note: null,
    at: Date.now(),
  });
  openai = new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
});

afterAll(async () => {
  await harness?.close();
});

const PROMPT = [{ role: 'user' as const, content: 'Name three old toll roads.' }];

async function balance(): Promise<bigint> {
  return (await harness.gateway.storage.billing.balance(accountId))!.balanceNano;
}

/** The price of an OpenAI-shaped usage at the model's list prices (no cache in these prompts). */
function priceOf(model: string, usage: { prompt_tokens: number; completion_tokens: number }): bigint {
  const { prices } = catalog.resolve(model);
  return BigInt(usage.prompt_tokens) * prices.input + BigInt(usage.completion_tokens) * prices.output;
}

/** A refused call: its 400's param, and proof that nothing was held, billed or recorded. */
async function refusedParam(call: () => Promise<unknown>): Promise<string | null | undefined> {
  const before = await balance();
  const records = (await harness.gateway.storage.usage.listByAccount(accountId, 1000)).length;
  const error = (await call().catch((caught: unknown) => caught)) as { status?: number; param?: string | null };
  expect(error.status).toBe(400);
  expect(await balance()).toBe(before);
  expect((await harness.gateway.storage.usage.listByAccount(accountId, 1000)).length).toBe(records);
  return error.param;
}

describe('n on beta: every choice comes back, billed exactly', () => {
  it('a whole reply holds n choices, with the vendor usage of all of them, charged tokens × price', async () => {
    const direct = new OpenAI({ apiKey: 'direct', baseURL: harness.simulator!.baseUrls.openai, maxRetries: 0 });
    const upstream = await direct.chat.completions.create({ model: 'gpt-5.4', messages: PROMPT, n: 3 });
    const before = await balance();
    const completion = await openai.chat.completions.create({ model: 'beta-5.4', messages: PROMPT, n: 3 });
    expect(completion.choices.map((choice) => choice.index)).toEqual([0, 1, 2]);
    expect(completion.choices.map((choice) => choice.message.content)).toEqual(
      upstream.choices.map((choice) => choice.message.content),
    );
    expect(new Set(completion.choices.map((choice) => choice.message.content)).size).toBe(3);
    expect(completion.usage!.completion_tokens).toBe(upstream.usage!.completion_tokens);
    expect(before - (await balance())).toBe(priceOf('beta-5.4', completion.usage!));
  });

  it('a stream carries each choice under its index, the same texts as the whole reply', async () => {
    const whole = await openai.chat.completions.create({ model: 'beta-5.4', messages: PROMPT, n: 2 });
    const stream = await openai.chat.completions.create({
      model: 'beta-5.4',
      messages: PROMPT,
      n: 2,
      stream: true,
      stream_options: { include_usage: true },
    });
    const texts = ['', ''];
    const finishes: Array<string | null> = [null, null];
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        texts[choice.index] += choice.delta.content ?? '';
        if (choice.finish_reason) finishes[choice.index] = choice.finish_reason;
      }
      if (chunk.usage) usage = chunk.usage;
    }
    expect(texts).toEqual(whole.choices.map((choice) => choice.message.content));
    expect(finishes).toEqual(['stop', 'stop']);
    expect(usage!.completion_tokens).toBe(whole.usage!.completion_tokens);
  });

  it('the SDK stream helper assembles every choice', async () => {
    const final = await openai.chat.completions
      .stream({ model: 'beta-5.4', messages: PROMPT, n: 2 })
      .finalChatCompletion();
    expect(final.choices).toHaveLength(2);
    for (const choice of final.choices) expect(choice.message.content!.length).toBeGreaterThan(0);
  });
});

describe('logprobs on beta and delta', () => {
  it.each(['beta-5.4', 'delta-v4-flash'])(
    '%s: chat logprobs.content spells the reply, each token with top_logprobs alternatives',
    async (model) => {
      const completion = await openai.chat.completions.create({
        model,
        messages: PROMPT,
        logprobs: true,
        top_logprobs: 2,
      });
      const choice = completion.choices[0]!;
      const tokens = choice.logprobs!.content!;
      expect(tokens.map((token) => token.token).join('')).toBe(choice.message.content);
      for (const token of tokens) {
        expect(token.logprob).toBeLessThanOrEqual(0);
        expect(token.bytes).toEqual([...Buffer.from(token.token, 'utf8')]);
        expect(token.top_logprobs).toHaveLength(2);
      }
    },
  );

  it('streamed: each content chunk carries its tokens, assembled by the SDK helper', async () => {
    const final = await openai.chat.completions
      .stream({ model: 'beta-5.4', messages: PROMPT, n: 2, logprobs: true })
      .finalChatCompletion();
    for (const choice of final.choices) {
      const tokens = choice.logprobs!.content!;
      expect(tokens.map((token) => token.token).join('')).toBe(choice.message.content);
      for (const token of tokens) expect(token.top_logprobs).toEqual([]);
    }
  });
});

describe('refused where the vendor cannot give them: 400 naming the caller field, nothing held', () => {
  it('n on alpha and delta; n above what beta and gamma can return', async () => {
    for (const [model, n] of [
      ['alpha-sonnet-5', 2],
      ['delta-v4-flash', 2],
      ['gamma-2.5-pro', 9],
    ] as const) {
      expect(await refusedParam(() => openai.chat.completions.create({ model, messages: PROMPT, n }))).toBe('n');
    }
    expect(
      await refusedParam(() => openai.chat.completions.create({ model: 'beta-5.4', messages: PROMPT, n: 129 })),
    ).toBe('n');
  });

  it('logprobs on alpha, and on delta while it thinks', async () => {
    for (const model of ['alpha-haiku-4-5', 'delta-r1'])
      expect(
        await refusedParam(() => openai.chat.completions.create({ model, messages: PROMPT, logprobs: true })),
      ).toBe('logprobs');
  });
});

interface GenaiCandidate {
  index: number;
  text: string;
  finishReason?: string;
  chosen?: string[];
  top?: number[];
  avgLogprobs?: number;
}
interface GenaiOutcome {
  ok: boolean;
  status?: number;
  message?: string;
  candidates?: GenaiCandidate[];
  dropped?: string | null;
}

/**
 * Runs one @google/genai call (Node 24, from the agent test package) against the gateway: `generateContent`, or
 * `generateContentStream` with the chunks' candidates joined by index.
 */
async function genai(model: string, config: Record<string, unknown>, stream = false): Promise<GenaiOutcome> {
  const script = `
    import { GoogleGenAI } from '@google/genai';
    const ai = new GoogleGenAI({ apiKey: ${JSON.stringify(key)}, httpOptions: { baseUrl: ${JSON.stringify(harness.gateway.url)}, retryOptions: { attempts: 1 } } });
    const request = { model: ${JSON.stringify(model)}, contents: 'Name three old toll roads.', config: ${JSON.stringify(config)} };
    const byIndex = new Map();
    const take = (candidate) => {
      const index = candidate.index ?? 0;
      const seen = byIndex.get(index) ?? { index, text: '' };
      seen.text += (candidate.content?.parts ?? []).map((part) => part.text ?? '').join('');
      if (candidate.finishReason) seen.finishReason = candidate.finishReason;
      const result = candidate.logprobsResult;
      if (result) {
        seen.chosen = [...(seen.chosen ?? []), ...result.chosenCandidates.map((token) => token.token)];
        seen.top = [...(seen.top ?? []), ...result.topCandidates.map((step) => step.candidates.length)];
      }
      if (candidate.avgLogprobs !== undefined) seen.avgLogprobs = candidate.avgLogprobs;
      byIndex.set(index, seen);
    };
    try {
      let dropped = null;
      if (${stream}) {
        for await (const chunk of await ai.models.generateContentStream(request)) (chunk.candidates ?? []).forEach(take);
      } else {
        const response = await ai.models.generateContent(request);
        dropped = response.sdkHttpResponse?.headers?.['x-tollgate-dropped-params'] ?? null;
        (response.candidates ?? []).forEach(take);
      }
      console.log(JSON.stringify({ ok: true, dropped, candidates: [...byIndex.values()].sort((a, b) => a.index - b.index) }));
    } catch (error) {
      console.log(JSON.stringify({ ok: false, status: error.status, message: String(error.message) }));
    }`;
  const { stdout } = await promisify(execFile)(NODE_24, ['--input-type=module', '-e', script], {
    cwd: AGENTS_PACKAGE_DIR,
    timeout: 60_000,
  });
  return JSON.parse(stdout) as GenaiOutcome;
}

describe('candidateCount and responseLogprobs through @google/genai', () => {
  it.each(['gamma-2.5-pro', 'beta-5.4'])(
    '%s: two candidates, each with its logprobsResult spelling its text',
    async (model) => {
      const outcome = await genai(model, { candidateCount: 2, responseLogprobs: true, logprobs: 2 });
      expect(outcome.ok, outcome.message).toBe(true);
      const candidates = outcome.candidates!;
      expect(candidates.map((candidate) => candidate.index)).toEqual([0, 1]);
      expect(candidates[0]!.text).not.toBe(candidates[1]!.text);
      for (const candidate of candidates) {
        expect(candidate.finishReason).toBe('STOP');
        expect(candidate.chosen!.join('')).toBe(candidate.text);
        expect(candidate.top!.every((count) => count === 2)).toBe(true);
        expect(candidate.avgLogprobs).toBeLessThanOrEqual(0);
      }
    },
  );

  it.each(['gamma-2.5-pro', 'beta-5.4'])('%s: a stream carries the same candidates and tokens', async (model) => {
    const config = { candidateCount: 2, responseLogprobs: true };
    const [whole, streamed] = await Promise.all([genai(model, config), genai(model, config, true)]);
    expect(streamed.ok, streamed.message).toBe(true);
    expect(streamed.candidates!.map((candidate) => [candidate.text, candidate.finishReason])).toEqual(
      whole.candidates!.map((candidate) => [candidate.text, candidate.finishReason]),
    );
    for (const candidate of streamed.candidates!) expect(candidate.chosen!.join('')).toBe(candidate.text);
  });

  it('refuses what the model cannot return, naming the Gemini field; nothing held', async () => {
    const before = await balance();
    const gemini3 = await genai('gamma-3.5-flash', { candidateCount: 2 });
    expect(gemini3).toMatchObject({ ok: false, status: 400 });
    expect(gemini3.message).toContain('generationConfig.candidateCount');
    const alpha = await genai('alpha-haiku-4-5', { responseLogprobs: true });
    expect(alpha).toMatchObject({ ok: false, status: 400 });
    expect(alpha.message).toContain('generationConfig.responseLogprobs');
    const tooMany = await genai('gamma-2.5-pro', { candidateCount: 9 });
    expect(tooMany).toMatchObject({ ok: false, status: 400 });
    expect(tooMany.message).toContain('candidateCount');
    expect(await balance()).toBe(before);
  });
});
