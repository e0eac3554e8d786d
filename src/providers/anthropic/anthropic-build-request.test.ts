import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../canonical/errors.js';
import type { CanonicalMessage, ReasoningBlock } from '../../canonical/request.js';
import { buildAnthropicCountTokensRequest, buildAnthropicRequest } from './anthropic-build-request.js';
import { canonicalRequest, TEST_MODEL, userText } from '../../../test/helpers/anthropic-test-fixtures.js';

/** The translation rules alone: the gateway's own cache breakpoints (a request with an image may earn them) are tested in anthropic-prompt-cache.test.ts. */
const WITHOUT_AUTOMATIC_CACHING = { ...TEST_MODEL, automaticCaching: false };
/** A model older than Claude 4.1, which takes temperature, top_p and top_k together. */
const ALL_SAMPLING = { ...WITHOUT_AUTOMATIC_CACHING, upstreamModel: 'claude-sonnet-4-20250514' };
const build = (overrides: Parameters<typeof canonicalRequest>[0] = {}, model = WITHOUT_AUTOMATIC_CACHING) =>
  buildAnthropicRequest(canonicalRequest(overrides), model);

function thrown(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayError);
    return error as GatewayError;
  }
  throw new Error('expected a GatewayError');
}

const toolCall = (id: string, argumentsJson = '{"tz":"UTC"}'): CanonicalMessage['content'][number] => ({
  type: 'tool-call',
  id,
  name: 'get_time',
  argumentsJson,
});
const toolResult = (toolCallId: string, text: string, isError = false): CanonicalMessage['content'][number] => ({
  type: 'tool-result',
  toolCallId,
  content: [{ type: 'text', text }],
  isError,
});
const signedThinking: ReasoningBlock = {
  type: 'reasoning',
  text: 'Let me think.',
  signature: 'sig-abc',
  originVendor: 'anthropic',
};
const TIME_TOOL = {
  name: 'get_time',
  description: 'Current time',
  parameters: { type: 'object', properties: { tz: { type: 'string' } } },
};

describe('buildAnthropicRequest: basics', () => {
  it('builds the body with the upstream model, system blocks, stream flag and a default max_tokens', () => {
    const { body, droppedParameters, betaHeader } = build({
      system: [{ type: 'text', text: 'Be brief.' }],
      stream: true,
    });
    expect(body).toEqual({
      model: 'claude-sonnet-5',
      max_tokens: 8192,
      system: [{ type: 'text', text: 'Be brief.' }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello' }] }],
      stream: true,
    });
    expect(droppedParameters).toEqual([]);
    expect(betaHeader).toBeUndefined();
  });

  it('max_tokens: the client value is kept, capped at the model maximum, default is min(model max, 8192)', () => {
    expect(build({ maxOutputTokens: 300 }).body.max_tokens).toBe(300);
    expect(build({ maxOutputTokens: 100_000 }).body.max_tokens).toBe(64_000);
    expect(build({}, { ...TEST_MODEL, maxOutputTokens: 4096 }).body.max_tokens).toBe(4096);
  });

  it("a system message in mid-conversation stays in place as Anthropic's own system message, never merged into a turn", () => {
    const { body } = build({
      messages: [
        userText('Hi'),
        { role: 'assistant', content: [{ type: 'text', text: 'Hello!' }] },
        { role: 'system', content: [{ type: 'text', text: 'Answer in French.' }] },
        { role: 'system', content: [{ type: 'text', text: 'Be brief.' }] },
        userText('How are you?'),
      ],
    });
    expect(body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Hi' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Hello!' }] },
      { role: 'system', content: [{ type: 'text', text: 'Answer in French.' }] },
      { role: 'system', content: [{ type: 'text', text: 'Be brief.' }] },
      { role: 'user', content: [{ type: 'text', text: 'How are you?' }] },
    ]);
  });

  it("an Anthropic client's adaptive thinking, display, effort and output format go through as Anthropic fields", () => {
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
    const { body, droppedParameters } = build({
      extensionsProtocol: 'anthropic-messages',
      reasoning: { enabled: true, mode: 'adaptive', display: 'omitted', effort: 'high' },
      responseFormat: { type: 'json_schema', name: 'output', schema },
      extensions: { 'output_config.task_budget': { type: 'tokens', total: 5000 }, '?beta=true': true },
    });
    expect(body.thinking).toEqual({ type: 'adaptive', display: 'omitted' });
    expect(body.output_config).toEqual({
      format: { type: 'json_schema', schema },
      effort: 'high',
      task_budget: { type: 'tokens', total: 5000 },
    });
    // No forced JSON tool: the native format is used.
    expect(body.tools).toBeUndefined();
    expect(body).not.toHaveProperty('?beta=true');
    expect(droppedParameters).toEqual([]);
    expect(
      buildAnthropicRequest(
        canonicalRequest({ extensionsProtocol: 'anthropic-messages', extensions: { '?beta=true': true } }),
        TEST_MODEL,
      ).betaQuery,
    ).toBe(true);
  });

  it("an Anthropic client's effort alone does not turn thinking on", () => {
    const { body } = build({ extensionsProtocol: 'anthropic-messages', reasoning: { effort: 'low' } });
    expect(body.thinking).toBeUndefined();
    expect(body.output_config).toEqual({ effort: 'low' });
  });

  it('consecutive same-role messages are merged into one turn', () => {
    const { body } = build({
      messages: [
        userText('a'),
        userText('b'),
        { role: 'assistant', content: [{ type: 'text', text: 'c' }] },
        { role: 'assistant', content: [{ type: 'text', text: 'd' }] },
      ],
    });
    expect(body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'c' },
          { type: 'text', text: 'd' },
        ],
      },
    ]);
  });

  it('temperature is clamped to 1 without a report; top_p, top_k, stop and user are forwarded', () => {
    const { body, droppedParameters } = build(
      { sampling: { temperature: 1.7, topP: 0.9, topK: 40, stop: ['END', '  '] }, user: 'user-42' },
      ALL_SAMPLING,
    );
    expect(body).toMatchObject({
      temperature: 1,
      top_p: 0.9,
      top_k: 40,
      stop_sequences: ['END'],
      metadata: { user_id: 'user-42' },
    });
    expect(build({ sampling: { temperature: 0.3 } }, ALL_SAMPLING).body.temperature).toBe(0.3);
    // A whitespace-only stop sequence is refused by Anthropic: left out and reported.
    expect(droppedParameters).toEqual(['stop']);
  });

  it('Claude 4.7 and later take no sampling field: left out and reported (temperature 1 silently)', () => {
    for (const upstreamModel of ['claude-sonnet-5', 'claude-opus-4-8', 'claude-opus-4-7-20260416']) {
      const model = { ...WITHOUT_AUTOMATIC_CACHING, upstreamModel };
      const { body, droppedParameters } = build({ sampling: { temperature: 0.2, topP: 0.9, topK: 40 } }, model);
      for (const field of ['temperature', 'top_p', 'top_k']) expect(body).not.toHaveProperty(field);
      expect(droppedParameters).toEqual(['temperature', 'top_p', 'top_k']);
      expect(build({ sampling: { temperature: 1 } }, model).droppedParameters).toEqual([]);
    }
  });

  it('Claude 4.1 to 4.6 take temperature or top_p: with both, top_p is left out and reported', () => {
    const model = { ...WITHOUT_AUTOMATIC_CACHING, upstreamModel: 'claude-haiku-4-5' };
    const both = build({ sampling: { temperature: 0.2, topP: 0.9, topK: 40 } }, model);
    expect(both.body).toMatchObject({ temperature: 0.2, top_k: 40 });
    expect(both.body).not.toHaveProperty('top_p');
    expect(both.droppedParameters).toEqual(['top_p']);
    expect(build({ sampling: { topP: 0.9 } }, model).body.top_p).toBe(0.9);
  });

  it('user goes to metadata.user_id, else safety_identifier; with both, safety_identifier is reported', () => {
    expect(build({ safetyIdentifier: 'hash-1' }).body.metadata).toEqual({ user_id: 'hash-1' });
    const both = build({ user: 'u-1', safetyIdentifier: 'hash-1' });
    expect(both.body.metadata).toEqual({ user_id: 'u-1' });
    expect(both.droppedParameters).toEqual(['safety_identifier']);
  });

  it('presence/frequency penalty and seed are dropped and reported by their OpenAI names', () => {
    const { body, droppedParameters } = build({ sampling: { presencePenalty: 0.5, frequencyPenalty: 0.2, seed: 7 } });
    expect(body).not.toHaveProperty('seed');
    expect(droppedParameters).toEqual(['presence_penalty', 'frequency_penalty', 'seed']);
  });

  it('OpenAI-client extensions are dropped and reported', () => {
    const { body, droppedParameters } = build({ extensions: { logit_bias: { 1: 2 }, store: true } });
    expect(body).not.toHaveProperty('store');
    expect(droppedParameters).toEqual(['logit_bias', 'store']);
  });

  it('an Anthropic client: anthropic-beta becomes the header, other extensions are forwarded but never override built fields', () => {
    const { body, droppedParameters, betaHeader } = build({
      extensionsProtocol: 'anthropic-messages',
      extensions: { 'anthropic-beta': 'prompt-caching-2024-07-31,foo', service_tier: 'auto', max_tokens: 5 },
    });
    expect(betaHeader).toBe('prompt-caching-2024-07-31,foo');
    expect(body).toMatchObject({ service_tier: 'auto', max_tokens: 8192 });
    expect(body).not.toHaveProperty('anthropic-beta');
    expect(droppedParameters).toEqual([]);
  });

  it('an anthropic-beta extension from an OpenAI client is not forwarded as a header', () => {
    const { betaHeader, droppedParameters } = build({ extensions: { 'anthropic-beta': 'x' } });
    expect(betaHeader).toBeUndefined();
    expect(droppedParameters).toEqual(['anthropic-beta']);
  });
});

describe('buildAnthropicRequest: content', () => {
  it('empty text blocks: empty and whitespace-only text blocks are dropped, and a message left empty is dropped', () => {
    const { body } = build({
      system: [{ type: 'text', text: '   ' }],
      messages: [
        userText('Hi'),
        { role: 'assistant', content: [{ type: 'text', text: '' }, toolCall('call_1')] },
        { role: 'user', content: [toolResult('call_1', '09:00')] },
        { role: 'assistant', content: [{ type: 'text', text: ' \n ' }] },
        {
          role: 'user',
          content: [
            { type: 'text', text: '' },
            { type: 'text', text: 'Thanks' },
          ],
        },
      ],
    });
    expect(body).not.toHaveProperty('system');
    expect(body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Hi' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'call_1', name: 'get_time', input: { tz: 'UTC' } }] },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_1', content: [{ type: 'text', text: '09:00' }] },
          { type: 'text', text: 'Thanks' },
        ],
      },
    ]);
  });

  it('empty text blocks: a request with only empty messages is a 400, never a whitespace filler', () => {
    const error = thrown(() => build({ messages: [userText('  ')] }));
    expect(error.code).toBe('invalid_request');
    expect(error.param).toBe('messages');
  });

  it('empty text blocks: an empty tool result is sent without content', () => {
    const { body } = build({
      messages: [
        userText('Hi'),
        { role: 'assistant', content: [toolCall('call_1')] },
        { role: 'user', content: [toolResult('call_1', '')] },
      ],
    });
    expect(body.messages[2]).toEqual({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1' }] });
  });

  it('images: base64 (jpg read as jpeg) and URL sources; a PDF data URL becomes a document', () => {
    const { body } = build({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this?' },
            { type: 'image', source: { kind: 'base64', mediaType: 'image/jpg', data: 'AAAA' }, detail: 'high' },
            { type: 'image', source: { kind: 'url', url: 'https://example.com/a.png' } },
            { type: 'image', source: { kind: 'base64', mediaType: 'application/pdf', data: 'JVBER' } },
          ],
        },
      ],
    });
    expect(body.messages[0]!.content).toEqual([
      { type: 'text', text: 'What is this?' },
      { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: 'AAAA' } },
      { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } },
      { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBER' } },
    ]);
  });

  it('an image type Anthropic does not accept is a 400 naming the part', () => {
    const error = thrown(() =>
      build({
        messages: [
          userText('Hi'),
          {
            role: 'user',
            content: [
              { type: 'text', text: 'see' },
              { type: 'image', source: { kind: 'base64', mediaType: 'image/bmp', data: 'Qk0' } },
            ],
          },
        ],
      }),
    );
    expect(error.code).toBe('invalid_request');
    expect(error.param).toBe('messages[1].content[1]');
    expect(error.message).toMatch(/image\/bmp/);
  });

  it('documents become document blocks with their title', () => {
    const { body } = build({
      messages: [
        {
          role: 'user',
          content: [
            {
              type: 'document',
              source: { kind: 'base64', mediaType: 'application/pdf', data: 'JVBER' },
              title: 'Report',
            },
            { type: 'text', text: 'Summarise.' },
          ],
        },
      ],
    });
    expect(body.messages[0]!.content[0]).toEqual({
      type: 'document',
      source: { type: 'base64', media_type: 'application/pdf', data: 'JVBER' },
      title: 'Report',
    });
  });
});

describe('buildAnthropicRequest: tools', () => {
  it('tool definitions: input_schema defaults to an empty object schema, a missing root type becomes object, strict:true is kept', () => {
    const { body } = build({
      tools: [
        { name: 'now', description: 'Time' },
        { name: 'find', parameters: { properties: { q: { type: 'string' } } }, strict: true },
        { name: 'plain', parameters: { type: 'object', properties: {} }, strict: false },
      ],
    });
    expect(body.tools).toEqual([
      { name: 'now', description: 'Time', input_schema: { type: 'object', properties: {} } },
      { name: 'find', input_schema: { type: 'object', properties: { q: { type: 'string' } } }, strict: true },
      { name: 'plain', input_schema: { type: 'object', properties: {} } },
    ]);
  });

  it("writes each definition in the order of Anthropic's Tool type and keeps defer_loading", () => {
    const { body } = build({
      tools: [
        { name: 'later', description: 'Found by tool search', parameters: { type: 'object' }, deferLoading: true },
      ],
    });
    // Key order matters to a vendor that reads the definitions as text: the client's order, not the gateway's.
    expect(JSON.stringify(body.tools)).toBe(
      '[{"name":"later","description":"Found by tool search","input_schema":{"type":"object"},"defer_loading":true}]',
    );
  });

  it('a tool schema whose root is not an object is a 400 naming the tool', () => {
    const error = thrown(() => build({ tools: [TIME_TOOL, { name: 'bad', parameters: { type: 'array' } }] }));
    expect(error.param).toBe('tools[1].function.parameters');
  });

  it.each([
    [{ type: 'auto' } as const, undefined, { type: 'auto' }],
    [{ type: 'none' } as const, undefined, { type: 'none' }],
    [{ type: 'required' } as const, undefined, { type: 'any' }],
    [{ type: 'tool', name: 'get_time' } as const, undefined, { type: 'tool', name: 'get_time' }],
    [{ type: 'auto' } as const, false, { type: 'auto', disable_parallel_tool_use: true }],
    [{ type: 'required' } as const, false, { type: 'any', disable_parallel_tool_use: true }],
    [
      { type: 'tool', name: 'get_time' } as const,
      false,
      { type: 'tool', name: 'get_time', disable_parallel_tool_use: true },
    ],
    [{ type: 'none' } as const, false, { type: 'none' }],
    [undefined, false, { type: 'auto', disable_parallel_tool_use: true }],
    [undefined, true, undefined],
  ])('tool_choice %j with parallelToolCalls %s → %j', (toolChoice, parallelToolCalls, expected) => {
    const { body } = build({
      tools: [TIME_TOOL],
      ...(toolChoice === undefined ? {} : { toolChoice }),
      ...(parallelToolCalls === undefined ? {} : { parallelToolCalls }),
    });
    expect(body.tool_choice).toEqual(expected);
  });

  it('without tools no tool_choice is sent', () => {
    expect(build({ toolChoice: { type: 'required' }, parallelToolCalls: false }).body).not.toHaveProperty(
      'tool_choice',
    );
  });

  it('tool calls: arguments parsed into input, "" becomes {}', () => {
    const { body } = build({
      tools: [TIME_TOOL],
      messages: [
        userText('Time?'),
        {
          role: 'assistant',
          content: [{ type: 'text', text: 'Checking.' }, toolCall('call_1'), toolCall('call_2', '')],
        },
        { role: 'user', content: [toolResult('call_1', 'a'), toolResult('call_2', 'b')] },
      ],
    });
    expect(body.messages[1]!.content).toEqual([
      { type: 'text', text: 'Checking.' },
      { type: 'tool_use', id: 'call_1', name: 'get_time', input: { tz: 'UTC' } },
      { type: 'tool_use', id: 'call_2', name: 'get_time', input: {} },
    ]);
  });

  it('tool call arguments that are not a JSON object are a 400 naming the message', () => {
    const invalid = thrown(() =>
      build({ messages: [userText('Hi'), { role: 'assistant', content: [toolCall('call_1', '{"tz":')] }] }),
    );
    expect(invalid.code).toBe('invalid_request');
    expect(invalid.param).toBe('messages[1].content[0]');
    expect(invalid.message).toMatch(/call_1.*not valid JSON/);
    expect(
      thrown(() => build({ messages: [userText('Hi'), { role: 'assistant', content: [toolCall('call_1', '[1]')] }] }))
        .message,
    ).toMatch(/JSON object/);
  });

  it('one user message per tool turn: all results of a turn go in one user message, before any text (OpenAI-style history)', () => {
    const { body } = build({
      tools: [TIME_TOOL],
      messages: [
        userText('Times?'),
        {
          role: 'assistant',
          content: [{ type: 'text', text: '' }, toolCall('call_1'), toolCall('call_2', '{"tz":"JST"}')],
        },
        { role: 'user', content: [toolResult('call_1', '09:00')] },
        { role: 'user', content: [toolResult('call_2', '18:00', true)] },
        userText('Which is later?'),
      ],
    });
    expect(body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Times?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'call_1', name: 'get_time', input: { tz: 'UTC' } },
          { type: 'tool_use', id: 'call_2', name: 'get_time', input: { tz: 'JST' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_1', content: [{ type: 'text', text: '09:00' }] },
          { type: 'tool_result', tool_use_id: 'call_2', content: [{ type: 'text', text: '18:00' }], is_error: true },
          { type: 'text', text: 'Which is later?' },
        ],
      },
    ]);
  });

  it('one user message per tool turn: tool results placed after text in the same user message are moved first', () => {
    const { body } = build({
      messages: [
        userText('Hi'),
        { role: 'assistant', content: [toolCall('call_1')] },
        { role: 'user', content: [{ type: 'text', text: 'Here:' }, toolResult('call_1', 'ok')] },
      ],
    });
    expect(body.messages[2]!.content).toMatchObject([{ type: 'tool_result' }, { type: 'text' }]);
  });

  it('tool results keep their images; a bad image type there is a 400 naming the nested part', () => {
    const image = {
      type: 'image' as const,
      source: { kind: 'base64' as const, mediaType: 'image/png', data: 'iVBOR' },
    };
    const { body } = build({
      messages: [
        userText('Hi'),
        { role: 'assistant', content: [toolCall('call_1')] },
        { role: 'user', content: [{ type: 'tool-result', toolCallId: 'call_1', content: [image], isError: false }] },
      ],
    });
    expect(body.messages[2]!.content[0]).toEqual({
      type: 'tool_result',
      tool_use_id: 'call_1',
      content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBOR' } }],
    });
    const bad = { ...image, source: { ...image.source, mediaType: 'image/tiff' } };
    const error = thrown(() =>
      build({
        messages: [
          userText('Hi'),
          { role: 'assistant', content: [toolCall('call_1')] },
          { role: 'user', content: [{ type: 'tool-result', toolCallId: 'call_1', content: [bad], isError: false }] },
        ],
      }),
    );
    expect(error.param).toBe('messages[2].content[0].content[0]');
  });

  it('tool ids Anthropic refuses: tool ids with characters Anthropic refuses are rewritten alike in calls and results', () => {
    const { body } = build({
      messages: [
        userText('Hi'),
        { role: 'assistant', content: [toolCall('functions.get_time:0')] },
        { role: 'user', content: [toolResult('functions.get_time:0', 'ok')] },
      ],
    });
    expect(body.messages[1]!.content[0]).toMatchObject({ type: 'tool_use', id: 'functions_get_time_0' });
    expect(body.messages[2]!.content[0]).toMatchObject({ type: 'tool_result', tool_use_id: 'functions_get_time_0' });
  });
});

describe('buildAnthropicRequest: thinking', () => {
  it.each([
    ['minimal', 1024],
    ['low', 1024],
    ['medium', 2048],
    ['high', 4096],
  ])('effort %s → thinking budget %i', (effort, budget) => {
    expect(build({ reasoning: { effort } }).body.thinking).toEqual({ type: 'enabled', budget_tokens: budget });
  });

  it('effort none and enabled:false turn thinking off explicitly; no reasoning parameter sends nothing', () => {
    expect(build({ reasoning: { effort: 'none' } }).body.thinking).toEqual({ type: 'disabled' });
    expect(build({ reasoning: { enabled: false, budgetTokens: 5000 } }).body.thinking).toEqual({ type: 'disabled' });
    expect(build().body).not.toHaveProperty('thinking');
  });

  it('budgetTokens is used as given and wins over effort', () => {
    expect(build({ reasoning: { budgetTokens: 3000, effort: 'low' } }).body.thinking).toEqual({
      type: 'enabled',
      budget_tokens: 3000,
    });
  });

  it('an effort Anthropic has no bucket for leaves thinking off and is reported', () => {
    const { body, droppedParameters } = build({ reasoning: { effort: 'extreme' } });
    expect(body).not.toHaveProperty('thinking');
    expect(droppedParameters).toEqual(['reasoning_effort']);
  });

  it('max_tokens is raised above the budget when the client value does not exceed it', () => {
    const { body } = build({ reasoning: { budgetTokens: 10_000 }, maxOutputTokens: 2000 });
    expect(body.max_tokens).toBe(14_096);
    expect(body.thinking).toEqual({ type: 'enabled', budget_tokens: 10_000 });
    // Model maximum below budget + allowance: max_tokens stays at the maximum and the budget gives way.
    const small = build({ reasoning: { budgetTokens: 10_000 } }, { ...TEST_MODEL, maxOutputTokens: 8000 }).body;
    expect(small.max_tokens).toBe(8000);
    expect(small.thinking).toEqual({ type: 'enabled', budget_tokens: 4000 });
  });

  it('forced tool use with thinking: with thinking on, a forced tool_choice is downgraded to auto and temperature/top_k/low top_p dropped, all reported', () => {
    const { body, droppedParameters } = build(
      {
        tools: [TIME_TOOL],
        toolChoice: { type: 'required' },
        parallelToolCalls: false,
        sampling: { temperature: 0.2, topK: 5, topP: 0.5 },
        reasoning: { effort: 'high' },
      },
      ALL_SAMPLING,
    );
    expect(body.tool_choice).toEqual({ type: 'auto', disable_parallel_tool_use: true });
    expect(body).not.toHaveProperty('temperature');
    expect(body).not.toHaveProperty('top_k');
    expect(body).not.toHaveProperty('top_p');
    expect(droppedParameters.sort()).toEqual(['temperature', 'tool_choice', 'top_k', 'top_p']);
    expect(
      build({ tools: [TIME_TOOL], toolChoice: { type: 'tool', name: 'get_time' }, reasoning: { effort: 'low' } }).body
        .tool_choice,
    ).toEqual({ type: 'auto' });
    expect(build({ sampling: { topP: 0.97 }, reasoning: { effort: 'low' } }, ALL_SAMPLING).body.top_p).toBe(0.97);
    expect(build({ sampling: { temperature: 1 }, reasoning: { effort: 'low' } }).droppedParameters).toEqual([]);
  });

  it('signed thinking in tool loops: signed Anthropic thinking is replayed byte-identical when thinking is on', () => {
    const redacted: ReasoningBlock = {
      type: 'reasoning',
      text: '',
      redactedData: 'EncRypTed',
      originVendor: 'anthropic',
    };
    const { body, droppedParameters } = build({
      tools: [TIME_TOOL],
      reasoning: { budgetTokens: 2048 },
      extensionsProtocol: 'anthropic-messages',
      messages: [
        userText('Time?'),
        { role: 'assistant', content: [signedThinking, redacted, toolCall('toolu_01')] },
        { role: 'user', content: [toolResult('toolu_01', '09:00')] },
      ],
    });
    expect(body.messages[1]!.content).toEqual([
      { type: 'thinking', thinking: 'Let me think.', signature: 'sig-abc' },
      { type: 'redacted_thinking', data: 'EncRypTed' },
      { type: 'tool_use', id: 'toolu_01', name: 'get_time', input: { tz: 'UTC' } },
    ]);
    expect(body.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
    expect(droppedParameters).toEqual([]);
  });

  it('signed thinking in tool loops: with thinking off, reasoning blocks are stripped from the history', () => {
    const { body } = build({
      messages: [
        userText('Q'),
        { role: 'assistant', content: [signedThinking, { type: 'text', text: 'A' }] },
        userText('Q2'),
      ],
    });
    expect(body.messages[1]).toEqual({ role: 'assistant', content: [{ type: 'text', text: 'A' }] });
  });

  it('signed thinking in tool loops: a tool loop whose last tool turn has no signed thinking turns thinking off (reported) instead of failing', () => {
    const { body, droppedParameters } = build({
      tools: [TIME_TOOL],
      reasoning: { effort: 'medium' },
      messages: [
        userText('Time?'),
        { role: 'assistant', content: [{ type: 'reasoning', text: 'unsigned thoughts' }, toolCall('call_1')] },
        { role: 'user', content: [toolResult('call_1', '09:00')] },
      ],
    });
    expect(body).not.toHaveProperty('thinking');
    expect(body.messages[1]!.content).toEqual([
      { type: 'tool_use', id: 'call_1', name: 'get_time', input: { tz: 'UTC' } },
    ]);
    expect(droppedParameters).toEqual(['reasoning_effort']);
  });

  it('reasoning replayed only to its vendor: unsigned reasoning and reasoning signed by another vendor are never replayed', () => {
    const foreign: ReasoningBlock = {
      type: 'reasoning',
      text: 'gemini thoughts',
      signature: 'gsig',
      originVendor: 'gemini',
    };
    const foreignRedacted: ReasoningBlock = { type: 'reasoning', text: '', redactedData: 'x', originVendor: 'openai' };
    const unsigned: ReasoningBlock = { type: 'reasoning', text: 'deepseek thoughts', originVendor: 'deepseek' };
    const { body } = build({
      reasoning: { effort: 'low' },
      messages: [
        userText('Q'),
        { role: 'assistant', content: [foreign, foreignRedacted, unsigned, { type: 'text', text: 'A' }] },
        userText('Q2'),
      ],
    });
    expect(body.thinking).toEqual({ type: 'enabled', budget_tokens: 1024 });
    expect(body.messages[1]).toEqual({ role: 'assistant', content: [{ type: 'text', text: 'A' }] });
  });
});

describe('buildAnthropicRequest: response_format', () => {
  const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };

  it('json_schema: a tool named after the schema, forced, and its name handed to the mappers', () => {
    const { body, jsonToolName, droppedParameters } = build({
      responseFormat: { type: 'json_schema', name: 'weather.report', schema, strict: true },
    });
    expect(jsonToolName).toBe('weather_report');
    expect(body.tools).toEqual([
      { name: 'weather_report', description: expect.any(String), input_schema: schema, strict: true },
    ]);
    expect(body.tool_choice).toEqual({ type: 'tool', name: 'weather_report', disable_parallel_tool_use: true });
    expect(droppedParameters).toEqual([]);
  });

  it('json_object: a json_response tool accepting any object', () => {
    const { body, jsonToolName } = build({ responseFormat: { type: 'json_object' } });
    expect(jsonToolName).toBe('json_response');
    expect(body.tools).toEqual([
      { name: 'json_response', description: expect.any(String), input_schema: { type: 'object' } },
    ]);
    expect(build({ responseFormat: { type: 'text' } }).jsonToolName).toBeUndefined();
  });

  it('beside client tools the model must call a tool but may pick a real one; names never collide', () => {
    const { body, jsonToolName } = build({
      tools: [{ name: 'json_response' }],
      responseFormat: { type: 'json_object' },
    });
    expect(jsonToolName).toBe('json_response_json');
    expect(body.tool_choice).toEqual({ type: 'any', disable_parallel_tool_use: true });
    expect(
      build({ tools: [TIME_TOOL], toolChoice: { type: 'none' }, responseFormat: { type: 'json_object' } }).body
        .tool_choice,
    ).toMatchObject({ type: 'tool', name: 'json_response' });
  });

  it('a forced client tool call leaves no reply to format: no JSON tool', () => {
    const { body, jsonToolName } = build({
      tools: [TIME_TOOL],
      toolChoice: { type: 'required' },
      responseFormat: { type: 'json_object' },
    });
    expect(jsonToolName).toBeUndefined();
    expect(body.tool_choice).toEqual({ type: 'any' });
  });

  it('JSON mode with thinking: thinking gives way (forced tools are refused with thinking) and is reported', () => {
    const { body, droppedParameters } = build(
      { responseFormat: { type: 'json_object' }, reasoning: { effort: 'high' }, sampling: { temperature: 0.5 } },
      ALL_SAMPLING,
    );
    expect(body).not.toHaveProperty('thinking');
    expect(body.temperature).toBe(0.5);
    expect(droppedParameters).toEqual(['reasoning_effort']);
  });

  it('a schema whose root is not an object is a 400', () => {
    expect(
      thrown(() => build({ responseFormat: { type: 'json_schema', name: 'list', schema: { type: 'array' } } })).param,
    ).toBe('response_format.json_schema.schema');
  });
});

describe('buildAnthropicCountTokensRequest', () => {
  it('keeps the prompt fields and leaves out generation controls', () => {
    const { body, betaHeader } = buildAnthropicCountTokensRequest(
      canonicalRequest({
        system: [{ type: 'text', text: 'S' }],
        tools: [TIME_TOOL],
        toolChoice: { type: 'auto' },
        sampling: { temperature: 0.5, stop: ['x'] },
        maxOutputTokens: 100,
        stream: true,
        reasoning: { budgetTokens: 2048 },
        extensionsProtocol: 'anthropic-messages',
        extensions: { 'anthropic-beta': 'token-counting-2024-11-01', service_tier: 'auto' },
      }),
      TEST_MODEL,
    );
    expect(Object.keys(body).sort()).toEqual(['messages', 'model', 'system', 'thinking', 'tool_choice', 'tools']);
    expect(betaHeader).toBe('token-counting-2024-11-01');
  });
});
