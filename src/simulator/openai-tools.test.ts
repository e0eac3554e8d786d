import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import OpenAI from 'openai';
import type {
  ChatCompletionChunk,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from './simulator-server.js';

let simulator: RunningSimulator;
let client: OpenAI;

beforeAll(async () => {
  simulator = await startSimulator();
  client = new OpenAI({ baseURL: simulator.baseUrls.openai, apiKey: 'k', maxRetries: 0 });
});
afterAll(() => simulator.close());

const tokens = (text: string): number => encode(text).length;
const TOOLS: ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      parameters: {
        type: 'object',
        properties: {
          city: { type: 'string' },
          unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
          days: { type: 'integer' },
          detailed: { type: 'boolean' },
        },
        required: ['city'],
      },
    },
  },
  {
    type: 'function',
    function: { name: 'get_time', parameters: { type: 'object', properties: { zone: { type: 'string' } } } },
  },
];

function ask(
  text: string,
  extra: Partial<ChatCompletionCreateParamsNonStreaming> = {},
): ChatCompletionCreateParamsNonStreaming {
  return { model: 'gpt-5.5', tools: TOOLS, messages: [{ role: 'user', content: text }], ...extra };
}

async function collect(stream: AsyncIterable<ChatCompletionChunk>): Promise<ChatCompletionChunk[]> {
  const chunks: ChatCompletionChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

function calledNames(completion: OpenAI.ChatCompletion): string[] {
  return (completion.choices[0]?.message.tool_calls ?? []).map((call) =>
    call.type === 'function' ? call.function.name : call.custom.name,
  );
}

describe('OpenAI simulator: tool calls', () => {
  it('calls the directive tool with schema-derived arguments, content null and finish_reason tool_calls', async () => {
    const completion = await client.chat.completions.create(
      ask('What is the weather in Lisbon? [[sim tool=get_weather]]'),
    );
    const choice = completion.choices[0];
    expect(choice?.finish_reason).toBe('tool_calls');
    expect(choice?.message.content).toBeNull();
    const call = choice?.message.tool_calls?.[0];
    expect(call?.id).toMatch(/^call_[0-9a-f]{24}$/);
    const args = '{"city":"Lisbon","unit":"celsius","days":1,"detailed":true}';
    expect(call).toMatchObject({ type: 'function', function: { name: 'get_weather', arguments: args } });
    expect(completion.usage?.completion_tokens).toBe(tokens('get_weather') + tokens(args));
  });

  it('streams parallel calls with their own index, arguments in fragments, same as non-stream (tool calls numbered per response)', async () => {
    const params = ask('Weather and time in Lisbon? [[sim tool=get_weather,get_time]]');
    const completion = await client.chat.completions.create(params);
    expect(calledNames(completion)).toEqual(['get_weather', 'get_time']);
    const chunks = await collect(
      await client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } }),
    );
    expect(chunks[0]?.choices[0]?.delta).toEqual({ role: 'assistant', content: null, refusal: null });
    const fragments = chunks.flatMap((chunk) => chunk.choices[0]?.delta.tool_calls ?? []);
    const heads = fragments.filter((fragment) => fragment.id !== undefined);
    expect(heads.map((head) => [head.index, head.function?.name, head.function?.arguments])).toEqual([
      [0, 'get_weather', ''],
      [1, 'get_time', ''],
    ]);
    const rest = fragments.filter((fragment) => fragment.id === undefined);
    expect(rest.length).toBeGreaterThan(4);
    expect(rest.every((fragment) => fragment.function?.name === undefined && fragment.type === undefined)).toBe(true);
    const joined = ['', ''];
    for (const fragment of fragments) joined[fragment.index] += fragment.function?.arguments ?? '';
    expect(joined).toEqual(
      completion.choices[0]?.message.tool_calls?.map((call) =>
        call.type === 'function' ? call.function.arguments : '',
      ),
    );
    expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe('tool_calls');
    expect(chunks.at(-1)?.usage).toEqual(completion.usage);
    const accumulated = await client.chat.completions.stream({ ...params, stream: true }).finalChatCompletion();
    expect(accumulated.choices[0]?.message.tool_calls).toEqual(completion.choices[0]?.message.tool_calls);
  });

  it('obeys tool_choice (required, a named function, none) and parallel_tool_calls: false', async () => {
    expect(calledNames(await client.chat.completions.create(ask('Just chat', { tool_choice: 'required' })))).toEqual([
      'get_weather',
    ]);
    expect(
      calledNames(
        await client.chat.completions.create(
          ask('Just chat', { tool_choice: { type: 'function', function: { name: 'get_time' } } }),
        ),
      ),
    ).toEqual(['get_time']);
    const none = await client.chat.completions.create(ask('Lisbon [[sim tool=get_weather]]', { tool_choice: 'none' }));
    expect([none.choices[0]?.finish_reason, calledNames(none)]).toEqual(['stop', []]);
    const single = await client.chat.completions.create(
      ask('Lisbon [[sim tool=get_weather,get_time]]', { parallel_tool_calls: false }),
    );
    expect(calledNames(single)).toEqual(['get_weather']);
  });

  it('says a sentence before the call with tool-text=1', async () => {
    const params = ask('Lisbon [[sim tool=get_time tool-text=1]]');
    const completion = await client.chat.completions.create(params);
    expect(completion.choices[0]?.message.content).toBe('I will call get_time.');
    const chunks = await collect(await client.chat.completions.create({ ...params, stream: true }));
    expect(chunks[0]?.choices[0]?.delta.content).toBe('');
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')).toBe('I will call get_time.');
  });

  it('answers the tool-result turn with text quoting every result', async () => {
    const params = ask('Weather and time in Lisbon? [[sim tool=get_weather,get_time]]');
    const first = await client.chat.completions.create(params);
    const calls = first.choices[0]?.message.tool_calls ?? [];
    const history: ChatCompletionMessageParam[] = [
      ...params.messages,
      { role: 'assistant', content: null, tool_calls: calls },
      { role: 'tool', tool_call_id: calls[0]?.id ?? '', content: 'light rain, 14°C' },
      { role: 'tool', tool_call_id: calls[1]?.id ?? '', content: '09:30 WET' },
    ];
    const followUp = await client.chat.completions.create({ ...params, messages: history });
    expect(followUp.choices[0]?.finish_reason).toBe('stop');
    expect(followUp.choices[0]?.message.content?.startsWith('Tool results: "light rain, 14°C"; "09:30 WET".')).toBe(
      true,
    );
  });

  it('checks tool_choice against the tools, and refuses directives naming unknown tools', async () => {
    const error = (body: Record<string, unknown>) =>
      client.post('/chat/completions', { body }).catch((caught: unknown) => caught);
    const user = [{ role: 'user', content: 'hi' }];
    expect(await error({ model: 'gpt-5.5', messages: user, tool_choice: 'required' })).toMatchObject({
      status: 400,
      param: 'tool_choice',
      error: { message: "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified." },
    });
    expect(
      await error({
        model: 'gpt-5.5',
        messages: user,
        tools: TOOLS,
        tool_choice: { type: 'function', function: { name: 'nope' } },
      }),
    ).toMatchObject({ status: 400, param: 'tool_choice' });
    expect(await error({ ...ask('hi [[sim tool=nope]]') })).toMatchObject({ status: 400, code: 'simulator_directive' });
  });

  it('checks inline images: a base64 data URL of a supported type', async () => {
    const image = (url: string) =>
      client
        .post('/chat/completions', {
          body: {
            model: 'gpt-5.5',
            messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url } }] }],
          },
        })
        .catch((caught: unknown) => caught);
    expect(await image('data:image/png;base64,@@@')).toMatchObject({ status: 400, code: 'invalid_value' });
    expect(await image('data:image/bmp;base64,AAAA')).toMatchObject({ status: 400, code: 'invalid_image_format' });
  });
});

describe('OpenAI simulator: reasoning models', () => {
  it('counts hidden reasoning in completion_tokens and reasoning_tokens on o-series models', async () => {
    const completion = await client.chat.completions.create({
      model: 'o3',
      messages: [{ role: 'user', content: 'Explain tides' }],
    });
    const text = completion.choices[0]?.message.content ?? '';
    const reasoning = completion.usage?.completion_tokens_details?.reasoning_tokens ?? 0;
    expect(reasoning).toBeGreaterThan(5);
    expect(completion.usage?.completion_tokens).toBe(tokens(text) + reasoning);
    expect(text.startsWith('You said:')).toBe(true);
    const chunks = await collect(
      await client.chat.completions.create({
        model: 'o3',
        messages: [{ role: 'user', content: 'Explain tides' }],
        stream: true,
        stream_options: { include_usage: true },
      }),
    );
    expect(chunks.at(-1)?.usage).toEqual(completion.usage);
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')).toBe(text);
  });

  it('reasons on GPT-5 only when asked for an effort, longer for higher effort', async () => {
    const effort = async (reasoning_effort?: 'low' | 'high' | 'none'): Promise<number> =>
      (
        await client.chat.completions.create({
          model: 'gpt-5.5',
          messages: [{ role: 'user', content: 'Explain tides' }],
          ...(reasoning_effort ? { reasoning_effort } : {}),
        })
      ).usage?.completion_tokens_details?.reasoning_tokens ?? -1;
    expect(await effort()).toBe(0);
    expect(await effort('none')).toBe(0);
    expect(await effort('high')).toBeGreaterThan(await effort('low'));
  });
});
