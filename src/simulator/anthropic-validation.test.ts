import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from './simulator-server.js';

let simulator: RunningSimulator;
let client: Anthropic;

beforeAll(async () => {
  simulator = await startSimulator();
  client = new Anthropic({ baseURL: simulator.baseUrls.anthropic, apiKey: 'k', maxRetries: 0 });
});
afterAll(() => simulator.close());

type Body = Record<string, unknown>;
const user = { role: 'user', content: 'hi' };
const base: Body = { model: 'claude-haiku-4-5', max_tokens: 100, messages: [user] };
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
const JPEG = '/9j/4AAQSkZJRgABAQ==';
const TOOL = { name: 'lookup', input_schema: { type: 'object', properties: { q: { type: 'string' } } } };
const call = (id: string): Body => ({ type: 'tool_use', id, name: 'lookup', input: { q: 'x' } });
const result = (id: string): Body => ({ type: 'tool_result', tool_use_id: id, content: 'found' });

/** Sends `body` as-is (the SDK's types would refuse most of these) and returns Anthropic's error message. */
async function refusal(body: Body, path = '/v1/messages'): Promise<string> {
  try {
    await client.post(path, { body });
  } catch (error) {
    if (!(error instanceof Anthropic.BadRequestError)) throw error;
    const payload = error.error as { type: string; error: { type: string; message: string } };
    expect(payload.type).toBe('error');
    expect(payload.error.type).toBe('invalid_request_error');
    return payload.error.message;
  }
  throw new Error('request was accepted');
}

describe('Anthropic simulator: request validation', () => {
  it('refuses a body that is not JSON', async () => {
    const response = await fetch(`${simulator.baseUrls.anthropic}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
      body: '{"model":',
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error', message: expect.stringContaining('error parsing the body') },
    });
  });

  it('requires max_tokens (but count_tokens does not) and caps it', async () => {
    expect(await refusal({ model: 'claude-haiku-4-5', messages: [user] })).toBe('max_tokens: Field required');
    expect(await refusal({ ...base, max_tokens: 0 })).toBe('max_tokens: Input should be greater than or equal to 1');
    expect(await refusal({ ...base, max_tokens: 500_000 })).toMatch(
      /^max_tokens: 500000 > 128000, which is the maximum allowed number of output tokens/,
    );
    expect(
      (await client.messages.countTokens({ model: 'claude-haiku-4-5', messages: [{ role: 'user', content: 'hi' }] }))
        .input_tokens,
    ).toBeGreaterThan(0);
  });

  it('requires a non-empty messages list of user/assistant turns starting with the user', async () => {
    expect(await refusal({ ...base, messages: [] })).toBe('messages: at least one message is required');
    expect(await refusal({ ...base, messages: [{ role: 'tool', content: 'x' }, user] })).toBe(
      "messages.0.role: Input should be 'user', 'assistant' or 'system'",
    );
    expect(await refusal({ ...base, messages: [{ role: 'assistant', content: 'Hello' }, user] })).toBe(
      'messages: first message must use the "user" role',
    );
    expect(await refusal({ ...base, messages: [user, { role: 'assistant', content: [] }, user] })).toBe(
      'messages.1: all messages must have non-empty content except for the optional final assistant message',
    );
  });

  it('takes system messages (SystemMessageParam) anywhere, text only, and between a tool_use and its result nowhere', async () => {
    const system = (content: unknown) => ({ role: 'system', content });
    await expect(
      client.post('/v1/messages', {
        body: { ...base, messages: [system('Be brief.'), user, system([{ type: 'text', text: 'Now in French.' }])] },
      }),
    ).resolves.toBeDefined();
    expect(await refusal({ ...base, messages: [user, system([])] })).toBe(
      'messages.1: all messages must have non-empty content except for the optional final assistant message',
    );
    expect(await refusal({ ...base, messages: [user, system('  ')] })).toBe(
      'messages: text content blocks must contain non-whitespace text',
    );
    expect(
      await refusal({
        ...base,
        messages: [user, system([{ type: 'image', source: { type: 'url', url: 'https://x/y.png' } }])],
      }),
    ).toBe(
      "messages.1.content.0: Input tag 'image' found using 'type' does not match any of the expected tags: 'text'",
    );
    const call = { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'f', input: {} }] };
    const result = { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'ok' }] };
    expect(
      await refusal({
        ...base,
        tools: [{ name: 'f', input_schema: { type: 'object' } }],
        messages: [user, call, system('x'), result],
      }),
    ).toMatch(/without `tool_result` blocks immediately after/);
  });

  it('checks output_config: effort levels and an object-rooted JSON schema format', async () => {
    await expect(
      client.post('/v1/messages', {
        body: {
          ...base,
          output_config: { effort: 'high', format: { type: 'json_schema', schema: { type: 'object' } } },
        },
      }),
    ).resolves.toBeDefined();
    expect(await refusal({ ...base, output_config: { effort: 'extreme' } })).toBe(
      "output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh', 'max'",
    );
    expect(
      await refusal({ ...base, output_config: { format: { type: 'json_schema', schema: { type: 'array' } } } }),
    ).toBe('output_config.format.schema: The root of the schema must be of type "object"');
  });

  it('refuses empty and whitespace-only text blocks (empty text blocks)', async () => {
    expect(
      await refusal({ ...base, messages: [user, { role: 'assistant', content: [{ type: 'text', text: '' }] }, user] }),
    ).toBe('messages: text content blocks must be non-empty');
    expect(
      await refusal({
        ...base,
        messages: [user, { role: 'assistant', content: [{ type: 'text', text: ' \n' }] }, user],
      }),
    ).toBe('messages: text content blocks must contain non-whitespace text');
    expect(await refusal({ ...base, messages: [{ role: 'user', content: '   ' }] })).toBe(
      'messages: text content blocks must contain non-whitespace text',
    );
    expect(await refusal({ ...base, system: [{ type: 'text', text: '' }] })).toBe(
      'system: text content blocks must be non-empty',
    );
    expect(await refusal({ ...base, messages: [user, { role: 'assistant', content: 'Sure ' }] })).toBe(
      'messages: final assistant content cannot end with trailing whitespace',
    );
  });

  it('needs every tool_use answered by a tool_result in the very next user message (one user message per tool turn)', async () => {
    const twoCalls = { role: 'assistant', content: [call('toolu_a'), call('toolu_b')] };
    expect(
      await refusal({
        ...base,
        tools: [TOOL],
        messages: [
          user,
          twoCalls,
          { role: 'user', content: [result('toolu_a')] },
          { role: 'user', content: [result('toolu_b')] },
        ],
      }),
    ).toBe(
      'messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_b. Each `tool_use` block must have a corresponding `tool_result` block in the next message.',
    );
    expect(await refusal({ ...base, tools: [TOOL], messages: [user, twoCalls, user] })).toMatch(
      /without `tool_result` blocks immediately after: toolu_a, toolu_b/,
    );
    const accepted = await client.post('/v1/messages', {
      body: {
        ...base,
        tools: [TOOL],
        messages: [
          user,
          twoCalls,
          { role: 'user', content: [result('toolu_a'), result('toolu_b'), { type: 'text', text: 'go on' }] },
        ],
      },
    });
    expect(accepted).toMatchObject({ type: 'message' });
  });

  it('refuses an orphan tool_result', async () => {
    expect(await refusal({ ...base, tools: [TOOL], messages: [{ role: 'user', content: [result('toolu_x')] }] })).toBe(
      'messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_x. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.',
    );
  });

  it('requires tool ids matching ^[a-zA-Z0-9_-]+$ (tool ids Anthropic refuses)', async () => {
    expect(
      await refusal({
        ...base,
        tools: [TOOL],
        messages: [
          user,
          { role: 'assistant', content: [call('fc.1:2')] },
          { role: 'user', content: [result('fc.1:2')] },
        ],
      }),
    ).toBe("messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'");
  });

  it('requires input_schema of type object and consistent tool_choice', async () => {
    expect(await refusal({ ...base, tools: [{ name: 'lookup', input_schema: { type: 'string' } }] })).toBe(
      "tools.0.custom.input_schema.type: Input should be 'object'",
    );
    expect(await refusal({ ...base, tools: [{ name: 'lookup' }] })).toBe('tools.0.custom.input_schema: Field required');
    expect(await refusal({ ...base, tools: [{ name: 'bad name', input_schema: { type: 'object' } }] })).toMatch(
      /^tools\.0\.custom\.name: String should match pattern/,
    );
    expect(await refusal({ ...base, tool_choice: { type: 'any' } })).toBe(
      'tool_choice may only be specified while providing tools.',
    );
    expect(await refusal({ ...base, tools: [TOOL], tool_choice: { type: 'tool', name: 'other' } })).toMatch(
      /Tool 'other' not found/,
    );
  });

  it('keeps temperature within 0–1', async () => {
    expect(await refusal({ ...base, temperature: 1.5 })).toBe('temperature: Input should be less than or equal to 1');
    expect(await refusal({ ...base, temperature: -0.1 })).toBe(
      'temperature: Input should be greater than or equal to 0',
    );
  });

  it('accepts only jpeg/png/gif/webp images whose base64 decodes to that format', async () => {
    const image = (mediaType: string, data: string): Body => ({
      ...base,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { type: 'base64', media_type: mediaType, data } },
            { type: 'text', text: 'see' },
          ],
        },
      ],
    });
    expect(await refusal(image('image/bmp', PNG))).toBe(
      "messages.0.content.0.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'",
    );
    expect(await refusal(image('image/png', 'not base64!'))).toBe(
      'messages.0.content.0.image.source.base64.data: The image data is not valid base64.',
    );
    expect(await refusal(image('image/png', JPEG))).toBe(
      'messages.0.content.0.image.source.base64.data: Image does not match the provided media type image/png',
    );
    expect(await refusal(image('image/png', 'AAAA'))).toBe(
      'messages.0.content.0.image.source.base64.data: Could not process image',
    );
    expect(await client.post('/v1/messages', { body: image('image/jpeg', JPEG) })).toMatchObject({ type: 'message' });
  });

  it('checks the thinking budget: at least 1024 and below max_tokens', async () => {
    expect(await refusal({ ...base, max_tokens: 4000, thinking: { type: 'enabled', budget_tokens: 512 } })).toBe(
      'thinking.enabled.budget_tokens: Input should be greater than or equal to 1024',
    );
    expect(await refusal({ ...base, max_tokens: 1024, thinking: { type: 'enabled', budget_tokens: 1024 } })).toMatch(
      /^`max_tokens` must be greater than `thinking.budget_tokens`/,
    );
  });

  it('refuses forced tool use, temperature and top_k with thinking (forced tool use with thinking)', async () => {
    const thinking = { ...base, max_tokens: 4000, thinking: { type: 'enabled', budget_tokens: 2000 }, tools: [TOOL] };
    expect(await refusal({ ...thinking, tool_choice: { type: 'any' } })).toBe(
      'Thinking may not be enabled when tool_choice forces tool use.',
    );
    expect(await refusal({ ...thinking, tool_choice: { type: 'tool', name: 'lookup' } })).toBe(
      'Thinking may not be enabled when tool_choice forces tool use.',
    );
    expect(await refusal({ ...thinking, temperature: 0.5 })).toMatch(
      /^`temperature` may only be set to 1 when thinking is enabled/,
    );
    expect(await refusal({ ...thinking, top_k: 5 })).toMatch(/^`top_k` must be unset when thinking is enabled/);
  });

  it('refuses thinking blocks in a final assistant message when thinking is off', async () => {
    const message = await client.messages.create({
      model: 'claude-haiku-4-5',
      max_tokens: 2000,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      messages: [{ role: 'user', content: 'hi' }],
    });
    const thinking = message.content[0];
    expect(await refusal({ ...base, messages: [user, { role: 'assistant', content: [thinking] }] })).toMatch(
      /When thinking is disabled, an `assistant` message in the final position cannot contain `thinking`/,
    );
  });

  it('reports bad simulator directives instead of ignoring them', async () => {
    expect(await refusal({ ...base, messages: [{ role: 'user', content: 'hi [[sim fault=explode]]' }] })).toMatch(
      /^Simulator directive: unknown fault 'explode'/,
    );
  });
});

describe('Anthropic simulator: cache_control breakpoints', () => {
  const ephemeral = (ttl?: string): Body => ({ type: 'ephemeral', ...(ttl === undefined ? {} : { ttl }) });
  const text = (cache?: Body): Body => ({
    type: 'text',
    text: 'hi',
    ...(cache === undefined ? {} : { cache_control: cache }),
  });

  it('refuses an unknown type and a ttl other than 5m or 1h, naming the field', async () => {
    expect(await refusal({ ...base, messages: [{ role: 'user', content: [text({ type: 'persistent' })] }] })).toBe(
      "messages.0.content.0.cache_control: Input tag 'persistent' found using 'type' does not match any of the expected tags: 'ephemeral'",
    );
    expect(await refusal({ ...base, system: [text(ephemeral('10m'))] })).toBe(
      "system.0.cache_control.ephemeral.ttl: Input should be '5m' or '1h'",
    );
    expect(await refusal({ ...base, cache_control: ephemeral('2h') })).toBe(
      "cache_control.ephemeral.ttl: Input should be '5m' or '1h'",
    );
  });

  it('refuses a fifth breakpoint, the top-level one included', async () => {
    const four = [text(ephemeral()), text(ephemeral()), text(ephemeral()), text(ephemeral())];
    await client.post('/v1/messages', { body: { ...base, messages: [{ role: 'user', content: four }] } });
    expect(await refusal({ ...base, cache_control: ephemeral(), messages: [{ role: 'user', content: four }] })).toBe(
      'A maximum of 4 blocks with cache_control may be provided. Found 5.',
    );
  });

  it('refuses a 1h breakpoint after a 5m one, in the order tools, system, messages', async () => {
    const tools = [{ ...TOOL, cache_control: ephemeral('1h') }];
    await client.post('/v1/messages', {
      body: { ...base, tools, system: [text(ephemeral())], messages: [{ role: 'user', content: [text(ephemeral())] }] },
    });
    expect(
      await refusal({
        ...base,
        system: [text(ephemeral())],
        messages: [{ role: 'user', content: [text(ephemeral('1h'))] }],
      }),
    ).toMatch(/^A ttl='1h' cache_control block must not come after a ttl='5m' cache_control block/);
  });
});
