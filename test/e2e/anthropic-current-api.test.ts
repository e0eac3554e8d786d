/**
 * `/v1/messages` at the shape of the newest `@anthropic-ai/sdk` (1.14), on every model family, through that SDK:
 * mid-conversation system messages, `output_config`, threads refused, the `max_tokens` clamp, `message_start`
 * input counts, gateway-matched stop sequences, counting that agrees with billing, and replies the SDK's own
 * `Message` / `RawMessageStreamEvent` types accept (checked by the TypeScript compiler against the real `.d.ts`).
 */
import Anthropic from '@anthropic-ai/sdk';
import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RED_SQUARE_PNG_BASE64 } from '../fixtures/red-square.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const FAMILIES = ['alpha-sonnet-5', 'beta-5.4', 'gamma-2.5-pro', 'delta-v4-flash'] as const;
/** Reasoning models of the OpenAI-format vendors, whose streams tell the prompt's tokens only at the end too. */
const REASONING_AT_END = ['o3', 'delta-r1'] as const;

let harness: TestGateway;
let client: Anthropic;
let key: string;
/** Every reply and stream event seen, for the type check at the end. */
const messages: Anthropic.Message[] = [];
const streamEvents: Anthropic.RawMessageStreamEvent[] = [];

beforeAll(async () => {
  harness = await startTestGateway();
  ({ key } = await harness.createAccountWithKey());
  client = new Anthropic({ apiKey: key, baseURL: harness.gateway.url, maxRetries: 0 });
}, 60_000);

afterAll(async () => {
  await harness?.close();
});

async function api<T>(
  path: string,
  init: RequestInit = {},
  apiKey = key,
): Promise<{ status: number; headers: Headers; json: T }> {
  const response = await fetch(`${harness.gateway.url}${path}`, {
    ...init,
    headers: {
      'x-api-key': apiKey,
      'anthropic-version': '2023-06-01',
      'content-type': 'application/json',
      ...(init.headers as Record<string, string>),
    },
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    json: (text === '' ? undefined : JSON.parse(text)) as T,
  };
}

function textOf(message: Anthropic.Message): string {
  return message.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('');
}

describe.each(FAMILIES)('%s through @anthropic-ai/sdk 1.14', (model) => {
  const conversation: Anthropic.MessageParam[] = [
    { role: 'user', content: 'Plan a walk by the river.' },
    { role: 'assistant', content: 'Gladly. Where do you start?' },
    { role: 'system', content: 'From now on, answer briefly.' },
    { role: 'user', content: 'At the old bridge.' },
  ];

  it('takes a system message mid-conversation, stream and non-stream alike, message_start carrying the count count_tokens gives', async () => {
    const whole = await client.messages.create({ model, max_tokens: 300, messages: conversation });
    messages.push(whole);
    expect(whole.stop_reason).toBe('end_turn');
    expect(textOf(whole).length).toBeGreaterThan(0);
    const stream = client.messages.stream({ model, max_tokens: 300, messages: conversation });
    let startInput: number | undefined;
    stream.on('streamEvent', (event) => {
      streamEvents.push(event);
      if (event.type === 'message_start') startInput = event.message.usage.input_tokens;
    });
    const final = await stream.finalMessage();
    messages.push(final);
    expect(final.content).toEqual(whole.content);
    // The vendor's count when it tells it at the start; else the gateway's, the one count_tokens answers (and the
    // vendor bills): message_delta's count, which the SDK takes over message_start's, then agrees with it.
    const counted = await client.messages.countTokens({ model, messages: conversation });
    expect(startInput).toBeGreaterThan(0);
    expect(startInput).toBe(counted.input_tokens);
    expect(startInput).toBe(whole.usage.input_tokens);
    expect(final.usage.input_tokens).toBe(whole.usage.input_tokens);
  });

  it('counts a prompt exactly as it is billed (count_tokens = the reply’s input)', async () => {
    const tools: Anthropic.Tool[] = [
      {
        name: 'lookup',
        description: 'Look a word up',
        input_schema: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] },
      },
    ];
    const params = { model, system: 'You are terse.', messages: conversation, tools };
    const counted = await client.messages.countTokens(params);
    const reply = await client.messages.create({ ...params, max_tokens: 200 });
    const billedInput =
      reply.usage.input_tokens +
      (reply.usage.cache_read_input_tokens ?? 0) +
      (reply.usage.cache_creation_input_tokens ?? 0);
    expect(counted.input_tokens).toBe(billedInput);
  });

  it('counts a prompt beyond the exact-count budget (100,000 characters) as it is billed too', async () => {
    const long = 'The old bridge crosses the river where the road turns north. '.repeat(4_000);
    const params = {
      model,
      messages: [
        { role: 'user' as const, content: long },
        { role: 'assistant' as const, content: 'Go on.' },
        { role: 'user' as const, content: long },
      ],
    };
    const counted = await client.messages.countTokens(params);
    const reply = await client.messages.create({ ...params, max_tokens: 50 });
    expect(counted.input_tokens).toBeGreaterThan(long.length / 10);
    expect(counted.input_tokens).toBe(
      reply.usage.input_tokens +
        (reply.usage.cache_read_input_tokens ?? 0) +
        (reply.usage.cache_creation_input_tokens ?? 0),
    );
  });

  it('stops on a stop sequence and says which one, stream and non-stream', async () => {
    const prompt: Anthropic.MessageParam[] = [{ role: 'user', content: `Tell me about toll gates on ${model}.` }];
    const free = await client.messages.create({ model, max_tokens: 300, messages: prompt });
    const words = textOf(free)
      .split(/\s+/)
      .filter((word) => /^[A-Za-z]{4,}$/.test(word));
    const sequence = words[Math.floor(words.length / 2)]!;
    const before = textOf(free).slice(0, textOf(free).indexOf(sequence));
    const stopped = await client.messages.create({
      model,
      max_tokens: 300,
      messages: prompt,
      stop_sequences: ['ZZZ-never', sequence],
    });
    messages.push(stopped);
    expect(stopped.stop_reason).toBe('stop_sequence');
    expect(stopped.stop_sequence).toBe(sequence);
    expect(textOf(stopped)).toBe(before);
    const streamed = await client.messages
      .stream({ model, max_tokens: 300, messages: prompt, stop_sequences: [sequence] })
      .finalMessage();
    expect(streamed.stop_reason).toBe('stop_sequence');
    expect(streamed.stop_sequence).toBe(sequence);
    expect(textOf(streamed)).toBe(before);
  });

  it('clamps max_tokens above the model limit instead of refusing, and says so in a header', async () => {
    // Through fetch: the SDK itself refuses a non-stream call this large (it would expect a very long request).
    const clamped = await api<Anthropic.Message>('/v1/messages', {
      method: 'POST',
      body: JSON.stringify({ model, max_tokens: 200_000, messages: conversation }),
    });
    expect(clamped.status).toBe(200);
    expect(clamped.json.type).toBe('message');
    const limit = Number(clamped.headers.get('x-tollgate-max-tokens-clamped'));
    expect(limit).toBeGreaterThan(0);
    expect(limit).toBeLessThan(200_000);
    const streamed = await client.messages
      .stream({ model, max_tokens: 200_000, messages: conversation })
      .withResponse();
    expect(streamed.response.headers.get('x-tollgate-max-tokens-clamped')).toBe(String(limit));
    await streamed.data.finalMessage();
    const within = await client.messages.create({ model, max_tokens: 100, messages: conversation }).withResponse();
    expect(within.response.headers.get('x-tollgate-max-tokens-clamped')).toBeNull();
  });

  it("serves a thinking budget not below max_tokens (Qwen Code's 32000 with 32000), lowered and said in a header", async () => {
    const qwenCode = {
      model,
      max_tokens: 32_000,
      thinking: { type: 'enabled' as const, budget_tokens: 32_000 },
      messages: [{ role: 'user' as const, content: 'Name a river.' }],
    };
    const streamed = await client.messages.stream(qwenCode).withResponse();
    const served = Number(streamed.response.headers.get('x-tollgate-thinking-budget-clamped'));
    const limit = Number(streamed.response.headers.get('x-tollgate-max-tokens-clamped') ?? 32_000);
    // At least Anthropic's minimum, below the (possibly clamped) limit with room for the answer.
    expect(served).toBeGreaterThanOrEqual(1024);
    expect(served).toBeLessThanOrEqual(limit - Math.min(4096, limit / 2));
    const final = await streamed.data.finalMessage();
    expect(final.stop_reason).toBe('end_turn');
    const whole = await api<Anthropic.Message>('/v1/messages', { method: 'POST', body: JSON.stringify(qwenCode) });
    expect(whole.status).toBe(200);
    expect(whole.json.content.length).toBeGreaterThan(0);
    expect(whole.headers.get('x-tollgate-thinking-budget-clamped')).toBe(String(served));
    // No room for any budget (Anthropic's minimum is 1024): served without thinking, said as 0.
    const tight = await api<Anthropic.Message>('/v1/messages', {
      method: 'POST',
      body: JSON.stringify({ ...qwenCode, max_tokens: 1024, thinking: { type: 'enabled', budget_tokens: 1024 } }),
    });
    expect(tight.status).toBe(200);
    expect(tight.headers.get('x-tollgate-thinking-budget-clamped')).toBe('0');
    expect(tight.json.content.some((block) => block.type === 'thinking')).toBe(false);
    // A budget that fits is served as given, no header.
    const fits = await client.messages
      .create({ ...qwenCode, max_tokens: 4000, thinking: { type: 'enabled', budget_tokens: 2000 } })
      .withResponse();
    expect(fits.response.headers.get('x-tollgate-thinking-budget-clamped')).toBeNull();
  });

  it('serves output_config (JSON-schema format and effort) and adaptive thinking, translated, not dropped', async () => {
    const { data: reply, response } = await client.messages
      .create({
        model,
        max_tokens: 2000,
        messages: [{ role: 'user', content: 'Name a city.' }],
        thinking: { type: 'adaptive' },
        output_config: {
          effort: 'medium',
          format: {
            type: 'json_schema',
            schema: {
              type: 'object',
              properties: { city: { type: 'string' } },
              required: ['city'],
              additionalProperties: false,
            },
          },
        },
      })
      .withResponse();
    messages.push(reply);
    expect(reply.type).toBe('message');
    // Every family takes the format and the effort in its own form (README, field by field); only DeepSeek, which has
    // JSON mode but no schema-constrained output, reports the schema as asked, not enforced.
    const dropped = (response.headers.get('x-tollgate-dropped-params') ?? '').split(',').filter((name) => name !== '');
    expect(dropped).toEqual(model.startsWith('delta') ? ['response_format.json_schema'] : []);
    // The vendor (the simulator, as the real ones) answers JSON: an instance of the schema where it is enforced,
    // JSON mode's object on DeepSeek.
    const json = JSON.parse(textOf(reply)) as Record<string, unknown>;
    if (model.startsWith('delta')) expect(typeof json).toBe('object');
    else expect(json).toEqual({ city: expect.any(String) });
  });

  it('makes tool calls the SDK reads, with caller', async () => {
    const reply = await client.messages.create({
      model,
      max_tokens: 300,
      messages: [{ role: 'user', content: 'Look it up. [[sim tool=lookup]]' }],
      tools: [
        {
          name: 'lookup',
          input_schema: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] },
        },
      ],
    });
    messages.push(reply);
    expect(reply.stop_reason).toBe('tool_use');
    const call = reply.content.find((block): block is Anthropic.ToolUseBlock => block.type === 'tool_use')!;
    expect(call.caller).toEqual({ type: 'direct' });
  });

  it('accepts and reports the beta fields other vendors cannot use; refuses a thread with thread_unsupported_request', async () => {
    const { response } = await client.beta.messages
      .create({
        model,
        max_tokens: 100,
        messages: conversation,
        context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
        betas: ['context-management-2025-06-27', 'some-future-beta-2027-01-01'],
      })
      .withResponse();
    const dropped = response.headers.get('x-tollgate-dropped-params') ?? '';
    if (model.startsWith('alpha')) expect(dropped).not.toContain('context_management');
    else expect(dropped.split(',')).toEqual(expect.arrayContaining(['context_management', 'anthropic-beta']));
    // Older SDKs' beta calls (Claude Code's) add `?beta=true`: forwarded to Anthropic, reported elsewhere.
    const query = await api('/v1/messages?beta=true', {
      method: 'POST',
      body: JSON.stringify({ model, max_tokens: 50, messages: conversation }),
    });
    expect(query.status).toBe(200);
    if (!model.startsWith('alpha')) expect(query.headers.get('x-tollgate-dropped-params')).toBe('?beta=true');
    const threaded = await client.beta.messages
      .create({
        model,
        max_tokens: 100,
        messages: conversation,
        thread: { type: 'continue', previous_message_id: 'msg_refers_to_nothing' },
      })
      .catch((error: unknown) => error);
    expect(threaded).toBeInstanceOf(Anthropic.BadRequestError);
    expect((threaded as InstanceType<typeof Anthropic.APIError>).errorCode).toBe('thread_unsupported_request');
  });
});

describe.each(REASONING_AT_END)('%s, a reasoning model whose vendor counts the prompt only at the end', (model) => {
  it("streams message_start with the count count_tokens gives, and the vendor's in message_delta", async () => {
    const params = { model, messages: [{ role: 'user' as const, content: 'Why do rivers meander?' }] };
    const counted = await client.messages.countTokens(params);
    const stream = client.messages.stream({ ...params, max_tokens: 2000 });
    let startInput: number | undefined;
    let deltaInput: number | null | undefined;
    stream.on('streamEvent', (event) => {
      streamEvents.push(event);
      if (event.type === 'message_start') startInput = event.message.usage.input_tokens;
      if (event.type === 'message_delta') deltaInput = event.usage.input_tokens;
    });
    const final = await stream.finalMessage();
    messages.push(final);
    expect(counted.input_tokens).toBeGreaterThan(0);
    expect(startInput).toBe(counted.input_tokens);
    expect(deltaInput).toBe(counted.input_tokens);
  });
});

describe('bad input changes nothing', () => {
  it.each([
    [
      'an empty system message',
      {
        messages: [
          { role: 'user', content: 'a' },
          { role: 'system', content: '' },
        ],
      },
      'messages[1].content',
    ],
    [
      'a non-text system message',
      {
        messages: [
          { role: 'user', content: 'a' },
          {
            role: 'system',
            content: [
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: RED_SQUARE_PNG_BASE64 } },
            ],
          },
        ],
      },
      'messages[1].content[0]',
    ],
    [
      'a non-object output schema',
      {
        messages: [{ role: 'user', content: 'a' }],
        output_config: { format: { type: 'json_schema', schema: { type: 'string' } } },
      },
      'output_config.format.schema',
    ],
    [
      'a thread that refers to nothing',
      { messages: [{ role: 'user', content: 'a' }], thread: { type: 'continue', previous_message_id: 'msg_nothing' } },
      'thread',
    ],
    [
      'a thinking budget that is zero',
      {
        max_tokens: 32_000,
        messages: [{ role: 'user', content: 'a' }],
        thinking: { type: 'enabled', budget_tokens: 0 },
      },
      'thinking.budget_tokens',
    ],
    [
      'a thinking budget that is negative',
      {
        max_tokens: 32_000,
        messages: [{ role: 'user', content: 'a' }],
        thinking: { type: 'enabled', budget_tokens: -5 },
      },
      'thinking.budget_tokens',
    ],
    [
      'a thinking budget that is fractional',
      {
        max_tokens: 32_000,
        messages: [{ role: 'user', content: 'a' }],
        thinking: { type: 'enabled', budget_tokens: 2048.5 },
      },
      'thinking.budget_tokens',
    ],
    [
      'a thinking budget that is a string',
      {
        max_tokens: 32_000,
        messages: [{ role: 'user', content: 'a' }],
        thinking: { type: 'enabled', budget_tokens: '32000' },
      },
      'thinking.budget_tokens',
    ],
    [
      'a thinking budget that is below the minimum',
      {
        max_tokens: 32_000,
        messages: [{ role: 'user', content: 'a' }],
        thinking: { type: 'enabled', budget_tokens: 512 },
      },
      'thinking.budget_tokens',
    ],
  ])('%s → 400 naming the field; nothing billed', async (_name, body, field) => {
    const fresh = (await harness.createAccountWithKey()).key;
    for (const model of FAMILIES) {
      const { status, json } = await api<{ type: string; error: { type: string; message: string } }>(
        '/v1/messages',
        { method: 'POST', body: JSON.stringify({ model, max_tokens: 50, ...body }) },
        fresh,
      );
      expect(status).toBe(400);
      expect(json.error.type).toBe('invalid_request_error');
      expect(json.error.message).toContain(field);
    }
    const records = await api<{ data: unknown[] }>('/v1/usage/requests', {}, fresh);
    expect(records.json.data).toEqual([]);
    const account = await api<{ free_allowance: { used_today: number } }>('/v1/account', {}, fresh);
    expect(account.json.free_allowance.used_today).toBe(0);
  });
});

describe('images within the free allowance', () => {
  it.each(FAMILIES.filter((model) => !model.startsWith('delta')))(
    'an image request on %s costs nothing on either endpoint',
    async (model) => {
      const fresh = (await harness.createAccountWithKey()).key;
      const anthropic = new Anthropic({ apiKey: fresh, baseURL: harness.gateway.url, maxRetries: 0 });
      const { response } = await anthropic.messages
        .create({
          model,
          max_tokens: 200,
          messages: [
            {
              role: 'user',
              content: [
                { type: 'image', source: { type: 'base64', media_type: 'image/png', data: RED_SQUARE_PNG_BASE64 } },
                { type: 'text', text: 'What colour?' },
              ],
            },
          ],
        })
        .withResponse();
      expect(response.headers.get('x-tollgate-cost-usd')).toBe('0');
      const chat = await fetch(`${harness.gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${fresh}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model,
          max_tokens: 200,
          messages: [
            {
              role: 'user',
              content: [
                { type: 'image_url', image_url: { url: `data:image/png;base64,${RED_SQUARE_PNG_BASE64}` } },
                { type: 'text', text: 'What colour?' },
              ],
            },
          ],
        }),
      });
      expect(chat.status).toBe(200);
      expect(chat.headers.get('x-tollgate-cost-usd')).toBe('0');
    },
  );
});

describe('vendor details', () => {
  it('o3 and o4-mini get no non-default temperature or top_p: dropped and reported', async () => {
    for (const model of ['o3', 'o4-mini']) {
      const { data, response } = await client.messages
        .create({
          model,
          max_tokens: 200,
          temperature: 0.2,
          top_p: 0.5,
          messages: [{ role: 'user', content: 'hi' }],
        } as Anthropic.MessageCreateParamsNonStreaming)
        .withResponse();
      expect(data.type).toBe('message');
      expect(response.headers.get('x-tollgate-dropped-params')?.split(',')).toEqual(
        expect.arrayContaining(['temperature', 'top_p']),
      );
    }
  });

  it("answers Claude Code's connection probe, HEAD /api/hello", async () => {
    const response = await fetch(`${harness.gateway.url}/api/hello`, { method: 'HEAD' });
    expect(response.status).toBe(200);
  });
});

describe("the SDK's own types accept every reply", () => {
  it('type-checks every Message and RawMessageStreamEvent seen against @anthropic-ai/sdk 1.14', async () => {
    expect(messages.length).toBeGreaterThan(FAMILIES.length);
    expect(streamEvents.length).toBeGreaterThan(FAMILIES.length * 5);
    // Assigned from a non-literal value: required fields and their types are checked, extra fields (the cost) are not.
    const source = [
      "import type { Message, RawMessageStreamEvent } from '@anthropic-ai/sdk/resources/messages/messages';",
      'type Mutable<T> = { -readonly [K in keyof T]: Mutable<T[K]> };',
      `const messages = ${JSON.stringify(messages)} as const;`,
      `const events = ${JSON.stringify(streamEvents)} as const;`,
      'export const typedMessages: Message[] = messages as Mutable<typeof messages>;',
      'export const typedEvents: RawMessageStreamEvent[] = events as Mutable<typeof events>;',
    ].join('\n');
    const directory = join(import.meta.dirname, '../artifacts/sdk-type-check');
    rmSync(directory, { recursive: true, force: true });
    mkdirSync(directory, { recursive: true });
    const file = join(directory, 'replies.ts');
    writeFileSync(file, source);
    const tsc = join(import.meta.dirname, '../../node_modules/typescript/bin/tsc');
    const args = [
      tsc,
      '--noEmit',
      '--strict',
      '--skipLibCheck',
      '--module',
      'nodenext',
      '--moduleResolution',
      'nodenext',
      '--target',
      'es2022',
      file,
    ];
    const result = await promisify(execFile)(process.execPath, args).then(
      () => '',
      (error: { stdout?: string }) => error.stdout ?? String(error),
    );
    expect(result).toBe('');
  }, 120_000);
});
