import Anthropic from '@anthropic-ai/sdk';
import type {
  Message,
  MessageCreateParamsNonStreaming,
  MessageParam,
  Tool,
} from '@anthropic-ai/sdk/resources/messages';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from './simulator-server.js';

let simulator: RunningSimulator;
let client: Anthropic;

beforeAll(async () => {
  simulator = await startSimulator();
  client = new Anthropic({ baseURL: simulator.baseUrls.anthropic, apiKey: 'k', maxRetries: 0 });
});
afterAll(() => simulator.close());

const MODEL = 'claude-haiku-4-5';
const TOOLS: Tool[] = [
  {
    name: 'get_weather',
    description: 'Current weather for a city',
    input_schema: {
      type: 'object',
      properties: {
        city: { type: 'string' },
        unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
        days: { type: 'integer', minimum: 3 },
      },
      required: ['city'],
    },
  },
  { name: 'get_time', input_schema: { type: 'object', properties: { zone: { type: 'string' } } } },
];
const THINKING = { type: 'enabled', budget_tokens: 1024 } as const;

function ask(text: string, extra: Partial<MessageCreateParamsNonStreaming> = {}): MessageCreateParamsNonStreaming {
  return { model: MODEL, max_tokens: 2048, tools: TOOLS, messages: [{ role: 'user', content: text }], ...extra };
}

/** The conversation continued with a result for every tool_use of `reply`. */
function withResults(
  params: MessageCreateParamsNonStreaming,
  reply: Message,
  result = 'light rain, 14°C',
): MessageParam[] {
  const results = reply.content.flatMap((block) =>
    block.type === 'tool_use' ? [{ type: 'tool_result' as const, tool_use_id: block.id, content: result }] : [],
  );
  return [...params.messages, { role: 'assistant', content: reply.content }, { role: 'user', content: results }];
}

async function badRequestMessage(params: MessageCreateParamsNonStreaming): Promise<string> {
  const error = await client.messages.create(params).catch((caught: unknown) => caught);
  expect(error).toBeInstanceOf(Anthropic.BadRequestError);
  return ((error as InstanceType<typeof Anthropic.BadRequestError>).error as { error: { message: string } }).error
    .message;
}

describe('Anthropic simulator: tool use', () => {
  it('calls the tool named by the directive, with arguments from its schema and the prompt', async () => {
    const message = await client.messages.create(ask('What is the weather in Lisbon? [[sim tool=get_weather]]'));
    expect(message.stop_reason).toBe('tool_use');
    expect(message.content).toHaveLength(1);
    const call = message.content[0];
    if (call?.type !== 'tool_use') throw new Error('expected tool_use');
    expect(call.id).toMatch(/^toolu_01[a-zA-Z0-9_-]+$/);
    expect(call).toMatchObject({ name: 'get_weather', input: { city: 'Lisbon', unit: 'celsius', days: 3 } });
  });

  it('streams tool input as input_json_delta pieces (the first empty) and accumulates to the same message', async () => {
    const params = ask('Weather and time in Lisbon? [[sim tool=get_weather,get_time tool-text=1]]');
    const message = await client.messages.create(params);
    const events = [];
    for await (const event of await client.messages.create({ ...params, stream: true })) events.push(event);
    const toolStarts = events.filter(
      (event) => event.type === 'content_block_start' && event.content_block.type === 'tool_use',
    );
    expect(toolStarts.map((event) => event.type === 'content_block_start' && event.index)).toEqual([1, 2]);
    const firstDelta = events.find(
      (event) => event.type === 'content_block_delta' && event.delta.type === 'input_json_delta',
    );
    expect(firstDelta).toMatchObject({ index: 1, delta: { partial_json: '' } });
    const streamed = await client.messages.stream(params).finalMessage();
    expect(streamed.content).toEqual(message.content);
    expect(streamed.usage).toEqual(message.usage);
    expect(message.content.map((block) => block.type)).toEqual(['text', 'tool_use', 'tool_use']);
    expect(message.content[0]).toEqual({ type: 'text', text: 'I will call get_weather and get_time.' });
  });

  it('makes one call when parallel use is disabled, and obeys tool_choice any / tool / none', async () => {
    const parallel = 'Lisbon? [[sim tool=get_weather,get_time]]';
    const single = await client.messages.create(
      ask(parallel, { tool_choice: { type: 'auto', disable_parallel_tool_use: true } }),
    );
    expect(single.content.map((block) => block.type === 'tool_use' && block.name)).toEqual(['get_weather']);
    const any = await client.messages.create(ask('Just talk about Lisbon', { tool_choice: { type: 'any' } }));
    expect(any.content.map((block) => block.type === 'tool_use' && block.name)).toEqual(['get_weather']);
    const forced = await client.messages.create(
      ask('Just talk about Lisbon', { tool_choice: { type: 'tool', name: 'get_time' } }),
    );
    expect(forced.content.map((block) => block.type === 'tool_use' && block.name)).toEqual(['get_time']);
    const none = await client.messages.create(ask(parallel, { tool_choice: { type: 'none' } }));
    expect([none.stop_reason, none.content[0]?.type]).toEqual(['end_turn', 'text']);
  });

  it('answers the tool-result turn with text quoting the results (the directive does not loop)', async () => {
    const params = ask('Weather in Lisbon? [[sim tool=get_weather]]');
    const first = await client.messages.create(params);
    const followUp = await client.messages.create({ ...params, messages: withResults(params, first) });
    expect(followUp.stop_reason).toBe('end_turn');
    const block = followUp.content[0];
    expect(block?.type === 'text' && block.text.startsWith('Tool results: "light rain, 14°C".')).toBe(true);
  });

  it('refuses a directive naming a tool the request does not offer', async () => {
    expect(await badRequestMessage(ask('hi [[sim tool=get_stock]]'))).toMatch(
      /Simulator directive: tool 'get_stock' is not among the request's tools/,
    );
    expect(await badRequestMessage({ ...ask('hi [[sim tool=get_weather]]'), tools: [] })).toMatch(/offers no tools/);
  });
});

describe('Anthropic simulator: extended thinking', () => {
  it('opens with a signed thinking block, streamed as thinking deltas, then a signature delta', async () => {
    const params = ask('Explain tides briefly', { thinking: THINKING });
    const message = await client.messages.create(params);
    const [thinking, text] = message.content;
    if (thinking?.type !== 'thinking') throw new Error('expected thinking first');
    expect(thinking.thinking.startsWith('Thinking about "Explain tides briefly".')).toBe(true);
    expect(thinking.signature.length).toBeGreaterThan(20);
    expect(text?.type).toBe('text');
    const events = [];
    for await (const event of await client.messages.create({ ...params, stream: true })) events.push(event);
    const deltaTypes = events.flatMap((event) =>
      event.type === 'content_block_delta' && event.index === 0 ? [event.delta.type] : [],
    );
    expect(deltaTypes.at(-1)).toBe('signature_delta');
    expect(deltaTypes.slice(0, -1).every((type) => type === 'thinking_delta')).toBe(true);
    expect((await client.messages.stream(params).finalMessage()).content).toEqual(message.content);
    // Thinking counts as output.
    const withoutThinking = await client.messages.create(ask('Explain tides briefly'));
    expect(message.usage.output_tokens).toBeGreaterThan(withoutThinking.usage.output_tokens);
  });

  it('accepts the tool loop when the signed thinking block is replayed unchanged', async () => {
    const params = ask('Weather in Lisbon? [[sim tool=get_weather]]', { thinking: THINKING });
    const first = await client.messages.create(params);
    expect(first.content.map((block) => block.type)).toEqual(['thinking', 'tool_use']);
    const followUp = await client.messages.create({ ...params, messages: withResults(params, first) });
    expect(followUp.content.at(-1)).toMatchObject({ type: 'text' });
  });

  it('refuses the tool loop when the thinking block was dropped (signed thinking in tool loops)', async () => {
    const params = ask('Weather in Lisbon? [[sim tool=get_weather]]', { thinking: THINKING });
    const first = await client.messages.create(params);
    const stripped = { ...first, content: first.content.filter((block) => block.type !== 'thinking') };
    const message = await badRequestMessage({ ...params, messages: withResults(params, stripped) });
    expect(message).toMatch(
      /^messages\.1\.content\.0\.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`/,
    );
  });

  it('refuses a thinking block whose signature it did not issue, or whose text was altered (reasoning replayed only to its vendor)', async () => {
    const params = ask('Weather in Lisbon? [[sim tool=get_weather]]', { thinking: THINKING });
    const first = await client.messages.create(params);
    const swap = (change: (block: { thinking: string; signature: string }) => object): Message => ({
      ...first,
      content: first.content.map((block) => (block.type === 'thinking' ? { ...block, ...change(block) } : block)),
    });
    const foreign = swap(() => ({ signature: 'tg1.gemini.c2lnbmF0dXJl' }));
    expect(await badRequestMessage({ ...params, messages: withResults(params, foreign) })).toBe(
      'messages.1.content.0: Invalid signature in thinking block',
    );
    const altered = swap((block) => ({ thinking: `${block.thinking} (edited)` }));
    expect(await badRequestMessage({ ...params, messages: withResults(params, altered) })).toBe(
      'messages.1.content.0: Invalid signature in thinking block',
    );
    const redacted: MessageParam[] = [
      ...params.messages,
      {
        role: 'assistant',
        content: [
          { type: 'redacted_thinking', data: 'opaque' },
          { type: 'text', text: 'ok' },
        ],
      },
      { role: 'user', content: 'next' },
    ];
    expect(await badRequestMessage({ ...params, messages: redacted })).toMatch(/redacted_thinking/);
  });

  it('lets max_tokens cut into thinking, which counts toward the cap', async () => {
    const message = await client.messages.create(
      ask('Explain tides [[sim reasoning-words=40]]', { thinking: THINKING, max_tokens: 1030 }),
    );
    expect(message.stop_reason).toBe('end_turn');
    const capped = await client.messages.create({
      ...ask('Explain tides [[sim words=2000]]', { thinking: THINKING }),
      max_tokens: 1025,
    });
    expect([capped.stop_reason, capped.usage.output_tokens]).toEqual(['max_tokens', 1025]);
  });
});
