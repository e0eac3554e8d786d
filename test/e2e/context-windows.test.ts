/**
 * A prompt over the model's context window, refused in the exact form each caller's vendor uses (the form agents act
 * on: Claude Code compacts on Anthropic's "prompt is too long", Codex stops on OpenAI's `context_length_exceeded`),
 * whether the gateway refuses it (the operator's `models.<id>.contextWindow`) or the vendor does (the simulator's
 * `context-window=` directive, in each vendor's own words). Nothing is held or billed for a refused prompt, and
 * every model listing shows the window served.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

/** The window the operator lowers four models to, one per family. */
const WINDOW = 3000;
const LOWERED = ['alpha-sonnet-5', 'beta-5.4', 'gamma-2.5-pro', 'delta-v4-flash'] as const;
/** About 6,000 tokens: past the lowered window, far inside every model's own. */
const LONG_PROMPT = Array.from({ length: 300 }, (_, i) => `Line ${i}: the toll keeper counts ${i * 7} carts.`).join(
  '\n',
);
/** A window the simulated vendor enforces itself, smaller than any prompt below. */
const VENDOR_WINDOW = 10;
const VENDOR_REFUSES = `Tell me about the bridge and its toll. [[sim context-window=${VENDOR_WINDOW}]]`;

const RESPONSES_WORDS = 'Your input exceeds the context window of this model. Please adjust your input and try again.';

let harness: TestGateway;
let key: string;
let openai: OpenAI;
let anthropic: Anthropic;

beforeAll(async () => {
  const yaml = `models:\n${LOWERED.map((id) => `  ${id}: { contextWindow: ${WINDOW} }`).join('\n')}\n`;
  harness = await startTestGateway({ yaml });
  ({ key } = await harness.createAccountWithKey());
  openai = new OpenAI({ baseURL: harness.openaiBaseUrl, apiKey: key, maxRetries: 0 });
  anthropic = new Anthropic({ baseURL: harness.gateway.url, apiKey: key, maxRetries: 0 });
}, 60_000);

afterAll(async () => {
  await harness?.close();
});

interface AccountState {
  balance: { reserved_nano_usd: string; requests_in_flight: number; nano_usd: string };
  free_allowance: { used_today: number };
}

async function account(): Promise<AccountState> {
  const response = await fetch(`${harness.openaiBaseUrl}/account`, { headers: { authorization: `Bearer ${key}` } });
  return (await response.json()) as AccountState;
}

async function usageRecords(): Promise<Array<{ status: string; input_tokens: number; cost_nano_usd: string }>> {
  const response = await fetch(`${harness.openaiBaseUrl}/usage/requests?limit=100`, {
    headers: { authorization: `Bearer ${key}` },
  });
  return ((await response.json()) as { data: Array<{ status: string; input_tokens: number; cost_nano_usd: string }> })
    .data;
}

/** Runs `call`, which must be refused; asserts nothing was held or charged, and returns what it threw. */
async function refused<T>(call: () => Promise<unknown>): Promise<T> {
  const before = await account();
  const recordsBefore = await usageRecords();
  const error = await call().then(
    () => expect.unreachable('the prompt was served'),
    (caught: unknown) => caught,
  );
  const after = await account();
  expect(after.balance.nano_usd).toBe(before.balance.nano_usd);
  expect(after.balance.reserved_nano_usd).toBe('0');
  expect(after.balance.requests_in_flight).toBe(0);
  expect(after.free_allowance.used_today).toBe(before.free_allowance.used_today);
  // A vendor's refusal is recorded for the usage log at no cost; the gateway's own records nothing.
  const records = await usageRecords();
  for (const record of records.slice(0, records.length - recordsBefore.length)) {
    expect(record.status).toBe('upstream_error');
    expect(record.cost_nano_usd).toBe('0');
  }
  return error as T;
}

interface GoogleReply {
  status: number;
  body: { error: { code: number; status: string; message: string } };
}

async function gemini(model: string, text: string): Promise<GoogleReply> {
  const response = await fetch(`${harness.gateway.url}/v1beta/models/${model}:generateContent`, {
    method: 'POST',
    headers: { 'x-goog-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text }] }] }),
  });
  return { status: response.status, body: (await response.json()) as GoogleReply['body'] };
}

describe('a prompt over the window the gateway serves', () => {
  it('is refused on /v1/messages as Anthropic words it, stream or not, with both counts', async () => {
    for (const model of LOWERED) {
      const error = await refused<InstanceType<typeof Anthropic.BadRequestError>>(() =>
        anthropic.messages
          .stream({ model, max_tokens: 100, messages: [{ role: 'user', content: LONG_PROMPT }] })
          .finalMessage(),
      );
      expect(error).toBeInstanceOf(Anthropic.BadRequestError);
      expect(error.headers?.get('x-should-retry')).toBe('false');
      const body = error.error as { error: { type: string; message: string } };
      expect(body.error.type).toBe('invalid_request_error');
      const match = /^prompt is too long: (\d+) tokens > (\d+) maximum$/.exec(body.error.message);
      expect(match, body.error.message).not.toBeNull();
      expect(Number(match![1])).toBeGreaterThan(WINDOW);
      expect(Number(match![2])).toBe(WINDOW);
    }
  });

  it("is refused on /v1/chat/completions with OpenAI's context_length_exceeded and its wording", async () => {
    for (const model of LOWERED) {
      const error = await refused<InstanceType<typeof OpenAI.BadRequestError>>(() =>
        openai.chat.completions.create({ model, messages: [{ role: 'user', content: LONG_PROMPT }] }),
      );
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect(error.code).toBe('context_length_exceeded');
      expect(error.param).toBe('messages');
      expect(error.type).toBe('invalid_request_error');
      expect(error.error).toMatchObject({
        message: expect.stringMatching(
          new RegExp(
            `^This model's maximum context length is ${WINDOW} tokens\\. However, your messages resulted in \\d+ tokens\\. Please reduce the length of the messages\\.$`,
          ),
        ),
      });
    }
  });

  it('is refused on /v1/responses with the Responses wording, the code Codex acts on', async () => {
    for (const model of LOWERED) {
      const error = await refused<InstanceType<typeof OpenAI.BadRequestError>>(() =>
        openai.responses.create({ model, input: LONG_PROMPT, stream: true }),
      );
      expect(error.code).toBe('context_length_exceeded');
      expect(error.param).toBe('input');
      expect((error.error as { message: string }).message).toBe(RESPONSES_WORDS);
    }
  });

  it("is refused on Google's routes as Google words it", async () => {
    for (const model of LOWERED) {
      const { status, body } = await refused<GoogleReply>(async () => {
        const reply = await gemini(model, LONG_PROMPT);
        throw reply;
      });
      expect(status).toBe(400);
      expect(body.error.status).toBe('INVALID_ARGUMENT');
      expect(body.error.code).toBe(400);
      expect(body.error.message).toMatch(
        new RegExp(
          `^The input token count \\(\\d+\\) exceeds the maximum number of tokens allowed \\(${WINDOW}\\)\\.$`,
        ),
      );
    }
  });

  it('is served on a model whose window holds it', async () => {
    const reply = await anthropic.messages.create({
      model: 'alpha-haiku-4-5',
      max_tokens: 50,
      messages: [{ role: 'user', content: LONG_PROMPT }],
    });
    expect(reply.usage.input_tokens).toBeGreaterThan(WINDOW);
  });

  it('is listed with the window served, in every shape', async () => {
    const listed = await openai.models.retrieve('alpha-sonnet-5');
    expect((listed as unknown as { context_window: number }).context_window).toBe(WINDOW);
    const info = await anthropic.models.retrieve('beta-5.4');
    expect(info.max_input_tokens).toBe(WINDOW);
    expect(info).toMatchObject({ type: 'model', lifecycle: 'active', retires_at: null });
    const google = await fetch(`${harness.gateway.url}/v1beta/models/gamma-2.5-pro`, {
      headers: { 'x-goog-api-key': key },
    });
    expect(((await google.json()) as { inputTokenLimit: number }).inputTokenLimit).toBe(WINDOW);
    expect((await anthropic.models.retrieve('alpha-opus-4-8')).max_input_tokens).toBe(200_000);
  });
});

describe("a vendor's own refusal of a prompt over its window", () => {
  it('reaches an Anthropic client on an OpenAI-family model as "prompt is too long"', async () => {
    const error = await refused<InstanceType<typeof Anthropic.BadRequestError>>(() =>
      anthropic.messages.create({
        model: 'o4-mini',
        max_tokens: 50,
        messages: [{ role: 'user', content: VENDOR_REFUSES }],
      }),
    );
    const message = (error.error as { error: { message: string } }).error.message;
    expect(message).toMatch(new RegExp(`^prompt is too long: \\d+ tokens > ${VENDOR_WINDOW} maximum$`));
  });

  it("reaches an OpenAI chat client on an Anthropic model with OpenAI's code and wording", async () => {
    const error = await refused<InstanceType<typeof OpenAI.BadRequestError>>(() =>
      openai.chat.completions.create({
        model: 'alpha-haiku-4-5',
        messages: [{ role: 'user', content: VENDOR_REFUSES }],
      }),
    );
    expect(error.code).toBe('context_length_exceeded');
    expect((error.error as { message: string }).message).toMatch(
      new RegExp(
        `^This model's maximum context length is ${VENDOR_WINDOW} tokens\\. However, your messages resulted in \\d+ tokens\\.`,
      ),
    );
  });

  it('reaches a Responses client on a Gemini model with context_length_exceeded', async () => {
    const error = await refused<InstanceType<typeof OpenAI.BadRequestError>>(() =>
      openai.responses.create({ model: 'gamma-3.5-flash', input: VENDOR_REFUSES }),
    );
    expect(error.code).toBe('context_length_exceeded');
    expect((error.error as { message: string }).message).toBe(RESPONSES_WORDS);
  });

  it("reaches a Google client on a DeepSeek model in Google's words, counting the messages only", async () => {
    const { status, body } = await refused<GoogleReply>(async () => {
      throw await gemini('delta-r1', VENDOR_REFUSES);
    });
    expect(status).toBe(400);
    const match = /^The input token count \((\d+)\) exceeds the maximum number of tokens allowed \((\d+)\)\.$/.exec(
      body.error.message,
    );
    expect(match, body.error.message).not.toBeNull();
    expect(Number(match![2])).toBe(VENDOR_WINDOW);
    // DeepSeek names the messages and the completion apart: the prompt is the messages' count.
    expect(Number(match![1])).toBeLessThan(1000);
  });
});
