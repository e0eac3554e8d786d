import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MODEL_DEFINITIONS } from '../../src/catalog/models.js';
import { ONE_PAGE_PDF_BASE64 } from '../fixtures/one-page-pdf.js';
import { RED_SQUARE_PNG_BASE64 } from '../fixtures/red-square.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

let harness: TestGateway;
let openai: OpenAI;
let anthropic: Anthropic;

beforeAll(async () => {
  harness = await startTestGateway();
  // This file sends far more than 100 requests a minute through one key.
  const { key } = await harness.createAccountWithKey(undefined, 'enterprise');
  openai = new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
  anthropic = new Anthropic({ apiKey: key, baseURL: harness.gateway.url, maxRetries: 0 });
});

afterAll(async () => {
  await harness?.close();
});

const MODELS = MODEL_DEFINITIONS.map((definition) => definition.id);
/** One model per family for the longer scenarios. */
const FAMILY_MODELS = ['alpha-sonnet-5', 'beta-5.4', 'gamma-2.5-pro', 'delta-v4-flash'];

const WEATHER_TOOL_OPENAI: OpenAI.ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};
const WEATHER_TOOL_ANTHROPIC: Anthropic.Tool = {
  name: 'get_weather',
  description: 'Current weather for a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
const TOOL_RESULT = 'sunny, 21 degrees';

describe.each(MODELS)('%s', (model) => {
  it('OpenAI client: a stream assembled by finalChatCompletion() equals the non-stream reply', async () => {
    const params = {
      model,
      messages: [{ role: 'user' as const, content: `Describe the sea, please (${model}).` }],
      max_completion_tokens: 300,
    };
    const whole = await openai.chat.completions.create(params);
    const streamed = await openai.chat.completions
      .stream({ ...params, stream_options: { include_usage: true } })
      .finalChatCompletion();
    expect(whole.model).toBe(model);
    expect(whole.choices[0]!.message.content!.length).toBeGreaterThan(0);
    expect(streamed.choices[0]!.message.content).toBe(whole.choices[0]!.message.content);
    expect(streamed.choices[0]!.finish_reason).toBe(whole.choices[0]!.finish_reason);
    expect(whole.usage!.total_tokens).toBe(whole.usage!.prompt_tokens + whole.usage!.completion_tokens);
    expect(streamed.usage).toMatchObject({
      prompt_tokens: whole.usage!.prompt_tokens,
      completion_tokens: whole.usage!.completion_tokens,
    });
  });

  it('Anthropic client: a stream assembled by finalMessage() equals the non-stream reply', async () => {
    const params = {
      model,
      max_tokens: 300,
      messages: [{ role: 'user' as const, content: `Describe the sea, please (${model}).` }],
    };
    const whole = await anthropic.messages.create(params);
    const streamed = await anthropic.messages.stream(params).finalMessage();
    expect(whole.model).toBe(model);
    const text = whole.content.filter((block): block is Anthropic.TextBlock => block.type === 'text');
    expect(text.length).toBeGreaterThan(0);
    expect(streamed.content).toEqual(whole.content);
    expect(streamed.stop_reason).toBe(whole.stop_reason);
    expect(streamed.usage.output_tokens).toBe(whole.usage.output_tokens);
    expect(streamed.usage.input_tokens).toBe(whole.usage.input_tokens);
  });
});

describe.each(FAMILY_MODELS)('%s: tool loops and images', (model) => {
  it('OpenAI client: two-turn tool loop, streamed call equals the non-stream call', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'Weather in Lisbon? [[sim tool=get_weather]]' },
    ];
    const first = await openai.chat.completions.create({ model, messages, tools: [WEATHER_TOOL_OPENAI] });
    const call = first.choices[0]!.message.tool_calls?.[0];
    expect(first.choices[0]!.finish_reason).toBe('tool_calls');
    expect(call?.type === 'function' && call.function.name).toBe('get_weather');
    expect(JSON.parse(call!.type === 'function' ? call!.function.arguments : '')).toHaveProperty('city');
    const streamed = await openai.chat.completions
      .stream({ model, messages, tools: [WEATHER_TOOL_OPENAI] })
      .finalChatCompletion();
    expect(streamed.choices[0]!.finish_reason).toBe('tool_calls');
    expect(streamed.choices[0]!.message.tool_calls?.map((c) => c.type === 'function' && c.function.name)).toEqual([
      'get_weather',
    ]);

    messages.push(first.choices[0]!.message, { role: 'tool', tool_call_id: call!.id, content: TOOL_RESULT });
    const second = await openai.chat.completions.create({ model, messages, tools: [WEATHER_TOOL_OPENAI] });
    expect(second.choices[0]!.finish_reason).toBe('stop');
    expect(second.choices[0]!.message.content).toContain(TOOL_RESULT);
  });

  it('Anthropic client: two-turn tool loop, streamed call equals the non-stream call', async () => {
    const messages: Anthropic.MessageParam[] = [
      { role: 'user', content: 'Weather in Lisbon? [[sim tool=get_weather]]' },
    ];
    const first = await anthropic.messages.create({
      model,
      max_tokens: 500,
      messages,
      tools: [WEATHER_TOOL_ANTHROPIC],
    });
    expect(first.stop_reason).toBe('tool_use');
    const toolUse = first.content.find((block): block is Anthropic.ToolUseBlock => block.type === 'tool_use')!;
    expect(toolUse.name).toBe('get_weather');
    expect(toolUse.input).toHaveProperty('city');
    expect(toolUse.id).toMatch(/^[a-zA-Z0-9_-]+$/);
    const streamed = await anthropic.messages
      .stream({ model, max_tokens: 500, messages, tools: [WEATHER_TOOL_ANTHROPIC] })
      .finalMessage();
    // Gemini gives its calls no ids, so the gateway mints a fresh one per reply: compare everything else.
    const withoutIds = (content: Anthropic.ContentBlock[]) =>
      content.map((block) => (block.type === 'tool_use' ? { ...block, id: '' } : block));
    expect(withoutIds(streamed.content)).toEqual(withoutIds(first.content));

    messages.push(
      { role: 'assistant', content: first.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: TOOL_RESULT }] },
    );
    const second = await anthropic.messages.create({
      model,
      max_tokens: 500,
      messages,
      tools: [WEATHER_TOOL_ANTHROPIC],
    });
    expect(second.stop_reason).toBe('end_turn');
    expect(second.content.map((block) => (block.type === 'text' ? block.text : '')).join('')).toContain(TOOL_RESULT);
  });

  it('parallel tool calls keep their own arguments through both clients (tool calls numbered per response)', async () => {
    const content = 'Weather in two places [[sim tool=get_weather,get_weather]]';
    const viaOpenAI = await openai.chat.completions
      .stream({ model, messages: [{ role: 'user', content }], tools: [WEATHER_TOOL_OPENAI] })
      .finalChatCompletion();
    const calls = viaOpenAI.choices[0]!.message.tool_calls!;
    expect(calls).toHaveLength(2);
    for (const call of calls)
      expect(() => JSON.parse(call.type === 'function' ? call.function.arguments : '')).not.toThrow();
    expect(new Set(calls.map((call) => call.id)).size).toBe(2);
    const viaAnthropic = await anthropic.messages
      .stream({ model, max_tokens: 500, messages: [{ role: 'user', content }], tools: [WEATHER_TOOL_ANTHROPIC] })
      .finalMessage();
    expect(viaAnthropic.content.filter((block) => block.type === 'tool_use')).toHaveLength(2);
  });

  it('image input reaches the model (or is refused clearly where the vendor has no vision)', async () => {
    const request = openai.chat.completions.create({
      model,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What colour is this square?' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${RED_SQUARE_PNG_BASE64}` } },
          ],
        },
      ],
    });
    const viaAnthropic = anthropic.messages.create({
      model,
      max_tokens: 200,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: RED_SQUARE_PNG_BASE64 } },
            { type: 'text', text: 'What colour is this square?' },
          ],
        },
      ],
    });
    // Both awaited at once: one refused while the other is still awaited would be an unhandled rejection.
    if (model.startsWith('delta-')) {
      await Promise.all([
        expect(request).rejects.toBeInstanceOf(OpenAI.BadRequestError),
        expect(viaAnthropic).rejects.toBeInstanceOf(Anthropic.BadRequestError),
      ]);
      return;
    }
    const [completion, text] = await Promise.all([request, viaAnthropic]);
    // The image costs input tokens: more than the text alone.
    const textOnly = await openai.chat.completions.create({
      model,
      messages: [{ role: 'user', content: 'What colour is this square?' }],
    });
    expect(completion.usage!.prompt_tokens).toBeGreaterThan(textOnly.usage!.prompt_tokens);
    expect(text.usage.input_tokens).toBeGreaterThan(0);
  });

  it('an inline PDF reaches the model from either client (or is refused clearly where the vendor reads no documents)', async () => {
    const question = 'Summarise this document.';
    const viaOpenAI = openai.chat.completions.create({
      model,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: question },
            {
              type: 'file',
              file: { filename: 'blank.pdf', file_data: `data:application/pdf;base64,${ONE_PAGE_PDF_BASE64}` },
            },
          ],
        },
      ],
    });
    const viaAnthropic = anthropic.messages.create({
      model,
      max_tokens: 200,
      messages: [
        {
          role: 'user',
          content: [
            {
              type: 'document',
              source: { type: 'base64', media_type: 'application/pdf', data: ONE_PAGE_PDF_BASE64 },
              title: 'blank.pdf',
            },
            { type: 'text', text: question },
          ],
        },
      ],
    });
    if (model.startsWith('delta-')) {
      // Both awaited at once: awaiting one first left the other's refusal without a handler for a moment, which
      // vitest reports as an unhandled rejection when it comes back first.
      await Promise.all([
        expect(viaOpenAI).rejects.toBeInstanceOf(OpenAI.BadRequestError),
        expect(viaAnthropic).rejects.toBeInstanceOf(Anthropic.BadRequestError),
      ]);
      return;
    }
    // The vendor counts the document's pages as input: more than the question alone, on both routes.
    const textOnlyOpenAI = await openai.chat.completions.create({
      model,
      messages: [{ role: 'user', content: question }],
    });
    expect((await viaOpenAI).usage!.prompt_tokens).toBeGreaterThan(textOnlyOpenAI.usage!.prompt_tokens);
    const textOnlyAnthropic = await anthropic.messages.create({
      model,
      max_tokens: 200,
      messages: [{ role: 'user', content: question }],
    });
    expect((await viaAnthropic).usage.input_tokens).toBeGreaterThan(textOnlyAnthropic.usage.input_tokens);
  });

  it('a document given by URL is refused with a 400 naming it on OpenAI-format models, sent elsewhere', async () => {
    const request = anthropic.messages.create({
      model,
      max_tokens: 200,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'document', source: { type: 'url', url: 'https://example.com/report.pdf' } },
            { type: 'text', text: 'Summarise it.' },
          ],
        },
      ],
    });
    if (model.startsWith('beta-') || model.startsWith('delta-')) {
      const error = await request.then(
        () => undefined,
        (failure: unknown) => failure,
      );
      expect(error).toBeInstanceOf(Anthropic.BadRequestError);
      expect((error as InstanceType<typeof Anthropic.BadRequestError>).message).toMatch(/messages\[0\]/);
      return;
    }
    expect((await request).usage.input_tokens).toBeGreaterThan(0);
  });
});

describe('reasoning across formats', () => {
  it('delta-r1 reasoning reaches an OpenAI client as reasoning_content and an Anthropic client as a thinking block', async () => {
    const completion = await openai.chat.completions.create({
      model: 'delta-r1',
      messages: [{ role: 'user', content: 'Think first.' }],
    });
    const message = completion.choices[0]!.message as OpenAI.ChatCompletionMessage & { reasoning_content?: string };
    expect(message.reasoning_content?.length).toBeGreaterThan(0);
    const viaAnthropic = await anthropic.messages
      .stream({ model: 'delta-r1', max_tokens: 500, messages: [{ role: 'user', content: 'Think first.' }] })
      .finalMessage();
    expect(viaAnthropic.content[0]).toMatchObject({ type: 'thinking', signature: 'tg1.deepseek.' });
  });

  it('alpha thinking + tools: signed thinking blocks survive the round trip (signed thinking in tool loops, reasoning replayed only to its vendor)', async () => {
    const params = {
      model: 'alpha-sonnet-5',
      max_tokens: 4000,
      thinking: { type: 'enabled' as const, budget_tokens: 1024 },
      tools: [WEATHER_TOOL_ANTHROPIC],
    };
    const messages: Anthropic.MessageParam[] = [
      { role: 'user', content: 'Weather in Porto? [[sim tool=get_weather]]' },
    ];
    const first = await anthropic.messages.stream({ ...params, messages }).finalMessage();
    expect(first.content[0]).toMatchObject({ type: 'thinking' });
    const toolUse = first.content.find((block): block is Anthropic.ToolUseBlock => block.type === 'tool_use')!;
    messages.push(
      { role: 'assistant', content: first.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: TOOL_RESULT }] },
    );
    const second = await anthropic.messages.create({ ...params, messages });
    expect(second.content.map((block) => (block.type === 'text' ? block.text : '')).join('')).toContain(TOOL_RESULT);
  });

  it('gamma 3.x tool loop through an OpenAI client keeps the thought signature (Gemini thought signatures on calls)', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'Weather in Faro? [[sim tool=get_weather]]' },
    ];
    const first = await openai.chat.completions.create({
      model: 'gamma-3.5-flash',
      messages,
      tools: [WEATHER_TOOL_OPENAI],
    });
    const call = first.choices[0]!.message.tool_calls![0]!;
    // A client that keeps only the fields it knows: id, type, function.
    messages.push(
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: call.id,
            type: 'function',
            function: call.type === 'function' ? call.function : { name: '', arguments: '' },
          },
        ],
      },
      { role: 'tool', tool_call_id: call.id, content: TOOL_RESULT },
    );
    const second = await openai.chat.completions.create({
      model: 'gamma-3.5-flash',
      messages,
      tools: [WEATHER_TOOL_OPENAI],
    });
    expect(second.choices[0]!.message.content).toContain(TOOL_RESULT);
  });
});

describe('spec 5.3: the Anthropic SDK configured only through its environment', () => {
  it.each(['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN'])('works with ANTHROPIC_BASE_URL and %s', async (variable) => {
    const { key } = await harness.createAccountWithKey();
    const saved = { ...process.env };
    try {
      delete process.env.ANTHROPIC_API_KEY;
      delete process.env.ANTHROPIC_AUTH_TOKEN;
      process.env.ANTHROPIC_BASE_URL = harness.gateway.url;
      process.env[variable] = key;
      const fromEnvironment = new Anthropic({ maxRetries: 0 });
      const message = await fromEnvironment.messages.create({
        model: 'alpha-haiku-4-5',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'hello' }],
      });
      expect(message.type).toBe('message');
    } finally {
      process.env = saved;
    }
  });
});

describe('parameters a vendor cannot honour', () => {
  it('quality-only ones are dropped and named in x-tollgate-dropped-params', async () => {
    const { response } = await openai.chat.completions
      .create({
        model: 'alpha-sonnet-5',
        messages: [{ role: 'user', content: 'hi' }],
        seed: 7,
        presence_penalty: 0.5,
        frequency_penalty: 0.1,
      })
      .withResponse();
    const dropped = response.headers.get('x-tollgate-dropped-params')!.split(',');
    expect(dropped).toEqual(expect.arrayContaining(['seed', 'presence_penalty', 'frequency_penalty']));
    const { response: sameFormat } = await openai.chat.completions
      .create({ model: 'beta-5.4', messages: [{ role: 'user', content: 'hi' }], seed: 7, presence_penalty: 0.5 })
      .withResponse();
    expect(sameFormat.headers.get('x-tollgate-dropped-params')).toBeNull();
  });

  it('Anthropic top_k is dropped for OpenAI-format models and reported', async () => {
    // Newer SDK types omit top_k (the newest Anthropic models reject it), but the API still documents it.
    const params = {
      model: 'beta-5.4',
      max_tokens: 50,
      top_k: 5,
      messages: [{ role: 'user' as const, content: 'hi' }],
    };
    const { response } = await anthropic.messages
      .create(params as Anthropic.MessageCreateParamsNonStreaming)
      .withResponse();
    expect(response.headers.get('x-tollgate-dropped-params')).toContain('top_k');
  });

  it('contract-changing ones are refused before any vendor call where the vendor cannot honour them', async () => {
    await expect(
      openai.chat.completions.create({ model: 'alpha-sonnet-5', messages: [{ role: 'user', content: 'hi' }], n: 2 }),
    ).rejects.toBeInstanceOf(OpenAI.BadRequestError);
  });
});

describe('unparseable vendor replies', () => {
  it.each(FAMILY_MODELS)(
    '%s: a malformed non-stream reply is a 502 in each caller shape; a malformed chunk ends the stream with an error',
    async (model) => {
      const garbled = 'hi [[sim fault=malformed-chunk]]';
      const viaOpenAI = (await openai.chat.completions
        .create({ model, messages: [{ role: 'user', content: garbled }] })
        .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
      expect(viaOpenAI.status).toBe(502);
      const viaAnthropic = (await anthropic.messages
        .create({ model, max_tokens: 100, messages: [{ role: 'user', content: garbled }] })
        .catch((e: unknown) => e)) as InstanceType<typeof Anthropic.APIError>;
      expect(viaAnthropic.status).toBe(502);
      expect((viaAnthropic.error as { type: string }).type).toBe('error');
      const stream = anthropic.messages.stream({
        model,
        max_tokens: 100,
        messages: [{ role: 'user', content: 'hi [[sim fault=malformed-chunk after=1]]' }],
      });
      await expect(stream.finalMessage()).rejects.toThrow();
    },
  );
});
