import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../canonical/errors.js';
import type { CanonicalMessage, CanonicalRequest } from '../../canonical/request.js';
import { buildDeepSeekRequest } from './deepseek-build-request.js';

const FLASH = 'deepseek-v4-flash';
const REASONER = 'deepseek-reasoner';

function canonical(overrides: Partial<CanonicalRequest> = {}): CanonicalRequest {
  return {
    model: 'delta-v4-flash',
    system: [],
    messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }],
    sampling: {},
    stream: false,
    extensions: {},
    extensionsProtocol: 'openai-chat',
    ...overrides,
  };
}

function build(overrides: Partial<CanonicalRequest> = {}, upstreamModel = FLASH) {
  return buildDeepSeekRequest(canonical(overrides), upstreamModel);
}

/** A thinking tool loop: question, a tool-call turn with reasoning, its result, a second tool-call turn, its result. */
const TOOL_LOOP: CanonicalMessage[] = [
  { role: 'user', content: [{ type: 'text', text: 'Weather in Lisbon and Porto?' }] },
  {
    role: 'assistant',
    content: [
      { type: 'reasoning', text: 'I should look up Lisbon first.' },
      { type: 'tool-call', id: 'call_1', name: 'get_weather', argumentsJson: '{"city":"Lisbon"}' },
    ],
  },
  {
    role: 'user',
    content: [{ type: 'tool-result', toolCallId: 'call_1', content: [{ type: 'text', text: '21°C' }], isError: false }],
  },
  {
    role: 'assistant',
    content: [
      { type: 'reasoning', text: 'Now Porto.' },
      { type: 'text', text: 'Lisbon done.' },
      { type: 'tool-call', id: 'call_2', name: 'get_weather', argumentsJson: '{"city":"Porto"}' },
    ],
  },
  {
    role: 'user',
    content: [
      { type: 'tool-result', toolCallId: 'call_2', content: [{ type: 'text', text: 'timeout' }], isError: true },
    ],
  },
];

describe('buildDeepSeekRequest: messages', () => {
  it('sends text as one string per message, parts joined by a newline', () => {
    const { body } = build({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'first part' },
            { type: 'text', text: 'second part' },
          ],
        },
      ],
    });
    expect(body.messages).toEqual([{ role: 'user', content: 'first part\nsecond part' }]);
  });

  it('sends the system prompt as a leading system message', () => {
    const { body } = build({
      system: [
        { type: 'text', text: 'Be brief.' },
        { type: 'text', text: 'Answer in English.' },
      ],
    });
    expect(body.messages).toEqual([
      { role: 'system', content: 'Be brief.\nAnswer in English.' },
      { role: 'user', content: 'Hi' },
    ]);
  });

  it('refuses images with a 400 naming the model and the message', () => {
    const messages: CanonicalMessage[] = [
      { role: 'user', content: [{ type: 'text', text: 'Hi' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Hello' }] },
      { role: 'user', content: [{ type: 'image', source: { kind: 'url', url: 'https://example.com/cat.png' } }] },
    ];
    let caught: unknown;
    try {
      build({ messages });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(GatewayError);
    expect(caught).toMatchObject({ code: 'unsupported_parameter', status: 400, param: 'messages[2].content' });
    expect((caught as GatewayError).message).toBe(
      "The model 'delta-v4-flash' does not accept images (messages[2] contains one).",
    );
  });

  it('refuses images inside tool results and documents alike', () => {
    const imageResult: CanonicalMessage[] = [
      { role: 'assistant', content: [{ type: 'tool-call', id: 'call_1', name: 'screenshot', argumentsJson: '{}' }] },
      {
        role: 'user',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'call_1',
            content: [{ type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: 'iVBO' } }],
            isError: false,
          },
        ],
      },
    ];
    expect(() => build({ messages: imageResult })).toThrow(/does not accept images \(messages\[1\]/);
    const document: CanonicalMessage[] = [
      {
        role: 'user',
        content: [{ type: 'document', source: { kind: 'base64', mediaType: 'application/pdf', data: 'JVBE' } }],
      },
    ];
    expect(() => build({ messages: document })).toThrow(/does not accept documents \(messages\[0\]/);
  });

  it('DeepSeek same-role runs: successive same-role messages are merged (deepseek-reasoner rejects them)', () => {
    const messages: CanonicalMessage[] = [
      { role: 'user', content: [{ type: 'text', text: 'First question.' }] },
      { role: 'user', content: [{ type: 'text', text: 'Second question.' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'One answer.' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Another answer.' }] },
      { role: 'system', content: [{ type: 'text', text: 'Now be formal.' }] },
      { role: 'user', content: [{ type: 'text', text: 'Third question.' }] },
    ];
    const expected = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'First question.\n\nSecond question.' },
      { role: 'assistant', content: 'One answer.\n\nAnother answer.' },
      { role: 'system', content: 'Now be formal.' },
      { role: 'user', content: 'Third question.' },
    ];
    // Merging is harmless, so both the reasoner and the switchable model get it.
    for (const model of [REASONER, FLASH]) {
      expect(build({ system: [{ type: 'text', text: 'Be brief.' }], messages }, model).body.messages).toEqual(expected);
    }
  });

  it('DeepSeek same-role runs: a system prompt and a following system message become one; parallel tool results stay apart', () => {
    const { body } = build({
      system: [{ type: 'text', text: 'Be brief.' }],
      messages: [
        { role: 'system', content: [{ type: 'text', text: 'Use metric units.' }] },
        { role: 'user', content: [{ type: 'text', text: 'Weather?' }] },
        {
          role: 'assistant',
          content: [
            { type: 'tool-call', id: 'call_a', name: 'get_weather', argumentsJson: '{"city":"Lisbon"}' },
            { type: 'tool-call', id: 'call_b', name: 'get_weather', argumentsJson: '{"city":"Porto"}' },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool-result', toolCallId: 'call_a', content: [{ type: 'text', text: '21°C' }], isError: false },
            { type: 'tool-result', toolCallId: 'call_b', content: [{ type: 'text', text: '18°C' }], isError: false },
          ],
        },
        { role: 'user', content: [{ type: 'text', text: 'Which is warmer?' }] },
      ],
    });
    expect(body.messages).toEqual([
      { role: 'system', content: 'Be brief.\n\nUse metric units.' },
      { role: 'user', content: 'Weather?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Lisbon"}' } },
          { id: 'call_b', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Porto"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_a', content: '21°C' },
      { role: 'tool', tool_call_id: 'call_b', content: '18°C' },
      { role: 'user', content: 'Which is warmer?' },
    ]);
  });

  it('DeepSeek reasoning in tool loops: a thinking tool loop replays reasoning_content on every assistant tool-call turn, never as content', () => {
    const { body } = build({ messages: TOOL_LOOP }, REASONER);
    expect(body.messages).toEqual([
      { role: 'user', content: 'Weather in Lisbon and Porto?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Lisbon"}' } },
        ],
        reasoning_content: 'I should look up Lisbon first.',
      },
      { role: 'tool', tool_call_id: 'call_1', content: '21°C' },
      {
        role: 'assistant',
        content: 'Lisbon done.',
        tool_calls: [
          { id: 'call_2', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Porto"}' } },
        ],
        reasoning_content: 'Now Porto.',
      },
      { role: 'tool', tool_call_id: 'call_2', content: '[tool error] timeout' },
    ]);
  });

  it('DeepSeek reasoning in tool loops: tool-call turns before the latest user message keep their reasoning too (DeepSeek V4 rule)', () => {
    const messages: CanonicalMessage[] = [
      ...TOOL_LOOP,
      {
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'Both known.' },
          { type: 'text', text: 'Lisbon is warmer.' },
        ],
      },
      { role: 'user', content: [{ type: 'text', text: 'Thanks. And Faro?' }] },
    ];
    const sent = build({ messages, reasoning: { effort: 'high' } }).body.messages as Array<Record<string, unknown>>;
    const assistants = sent.filter((message) => message.role === 'assistant');
    expect(assistants.map((message) => message.reasoning_content)).toEqual([
      'I should look up Lisbon first.',
      'Now Porto.',
      undefined,
    ]);
    // The plain answer turn carries only its answer: its reasoning is neither replayed nor turned into content.
    expect(assistants[2]).toEqual({ role: 'assistant', content: 'Lisbon is warmer.' });
  });

  it('DeepSeek reasoning in tool loops: a tool-call turn whose reasoning the client did not keep gets an empty reasoning_content', () => {
    const withoutReasoning = TOOL_LOOP.map((message) => ({
      ...message,
      content: message.content.filter((block) => block.type !== 'reasoning'),
    }));
    const sent = build({ messages: withoutReasoning }, REASONER).body.messages as Array<Record<string, unknown>>;
    expect(sent.filter((message) => message.role === 'assistant').map((message) => message.reasoning_content)).toEqual([
      '',
      '',
    ]);
  });

  it('DeepSeek reasoning in tool loops: reasoning from any vendor is replayed as text; redacted reasoning has none to give', () => {
    const messages: CanonicalMessage[] = [
      { role: 'user', content: [{ type: 'text', text: 'Go.' }] },
      {
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'Signed elsewhere.', signature: 'sig', originVendor: 'anthropic' },
          { type: 'reasoning', text: '', redactedData: 'opaque', originVendor: 'anthropic' },
          { type: 'tool-call', id: 'call_1', name: 'run', argumentsJson: '{}' },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool-result', toolCallId: 'call_1', content: [{ type: 'text', text: 'ok' }], isError: false },
        ],
      },
    ];
    const sent = build({ messages }, REASONER).body.messages as Array<Record<string, unknown>>;
    expect(sent[1]).toMatchObject({ role: 'assistant', content: null, reasoning_content: 'Signed elsewhere.' });
  });

  it('sends no reasoning_content outside thinking mode', () => {
    const sent = build({ messages: TOOL_LOOP }).body.messages as Array<Record<string, unknown>>;
    expect(sent.some((message) => 'reasoning_content' in message)).toBe(false);
  });
});

describe('buildDeepSeekRequest: parameters', () => {
  it('uses max_tokens, never max_completion_tokens', () => {
    const { body } = build({ maxOutputTokens: 512 });
    expect(body.max_tokens).toBe(512);
    expect(body).not.toHaveProperty('max_completion_tokens');
  });

  it('usage lost in streams: a stream always asks for usage', () => {
    expect(build({ stream: true }).body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(build().body).not.toHaveProperty('stream_options');
  });

  it('sends tools and tool_choice in the OpenAI form, without the beta-only strict flag', () => {
    const { body, droppedParameters } = build({
      tools: [
        {
          name: 'get_weather',
          description: 'Weather now',
          parameters: { type: 'object', properties: {} },
          strict: true,
        },
      ],
      toolChoice: { type: 'tool', name: 'get_weather' },
      parallelToolCalls: false,
    });
    expect(body.tools).toEqual([
      {
        type: 'function',
        function: { name: 'get_weather', description: 'Weather now', parameters: { type: 'object', properties: {} } },
      },
    ]);
    expect(body.tool_choice).toEqual({ type: 'function', function: { name: 'get_weather' } });
    expect(body).not.toHaveProperty('parallel_tool_calls');
    expect(droppedParameters).toEqual(['tools.strict', 'parallel_tool_calls']);
  });

  it('drops and reports what DeepSeek does not document: top_k, seed, user', () => {
    const { body, droppedParameters } = build({ sampling: { topK: 40, seed: 7, stop: ['END'] }, user: 'u-1' });
    expect(body).toMatchObject({ stop: ['END'] });
    for (const field of ['top_k', 'seed', 'user']) expect(body).not.toHaveProperty(field);
    expect(droppedParameters).toEqual(['top_k', 'seed', 'user']);
  });

  it('deepseek-v4-flash without reasoning parameters: thinking is switched off and sampling is sent', () => {
    const { body, droppedParameters } = build({
      sampling: { temperature: 0, topP: 0.9, presencePenalty: 0.5, frequencyPenalty: 0.1 },
    });
    expect(body).toMatchObject({
      thinking: { type: 'disabled' },
      temperature: 0,
      top_p: 0.9,
      presence_penalty: 0.5,
      frequency_penalty: 0.1,
    });
    expect(body).not.toHaveProperty('reasoning_effort');
    expect(droppedParameters).toEqual([]);
  });

  it('deepseek-reasoner: no thinking switch is sent, and the sampling parameters it ignores are dropped and reported', () => {
    const { body, droppedParameters } = build(
      { sampling: { temperature: 0.2, topP: 0.9, presencePenalty: 0.5, frequencyPenalty: 0.1 } },
      REASONER,
    );
    expect(body.model).toBe(REASONER);
    for (const field of [
      'thinking',
      'reasoning_effort',
      'temperature',
      'top_p',
      'presence_penalty',
      'frequency_penalty',
    ]) {
      expect(body).not.toHaveProperty(field);
    }
    expect(droppedParameters).toEqual(['temperature', 'top_p', 'presence_penalty', 'frequency_penalty']);
  });

  it('deepseek-reasoner: a request to turn thinking off is dropped and reported; an effort is forwarded', () => {
    expect(build({ reasoning: { effort: 'none' } }, REASONER).droppedParameters).toEqual(['reasoning_effort']);
    expect(build({ reasoning: { enabled: false } }, REASONER).droppedParameters).toEqual(['thinking']);
    expect(build({ reasoning: { effort: 'medium' } }, REASONER).body).toMatchObject({ reasoning_effort: 'high' });
  });

  it('deepseek-v4-flash: reasoning_effort switches thinking on, mapped onto low / high / max', () => {
    const cases: Array<[string, string]> = [
      ['minimal', 'low'],
      ['low', 'low'],
      ['medium', 'high'],
      ['high', 'high'],
      ['xhigh', 'max'],
      ['max', 'max'],
    ];
    for (const [effort, tier] of cases) {
      const { body } = build({ reasoning: { effort }, sampling: { temperature: 0.3 } });
      expect(body).toMatchObject({ thinking: { type: 'enabled' }, reasoning_effort: tier });
      expect(body).not.toHaveProperty('temperature');
    }
    expect(build({ reasoning: { effort: 'none' } }).body).toMatchObject({ thinking: { type: 'disabled' } });
  });

  it('deepseek-v4-flash: Anthropic thinking switches thinking on, its budget bucketed onto a tier', () => {
    expect(build({ reasoning: { enabled: true, budgetTokens: 1024 } }).body).toMatchObject({
      thinking: { type: 'enabled' },
      reasoning_effort: 'low',
    });
    expect(build({ reasoning: { enabled: true, budgetTokens: 16_000 } }).body).toMatchObject({
      thinking: { type: 'enabled' },
      reasoning_effort: 'high',
    });
    const adaptive = build({ reasoning: { enabled: true } }).body;
    expect(adaptive).toMatchObject({ thinking: { type: 'enabled' } });
    expect(adaptive).not.toHaveProperty('reasoning_effort');
    expect(build({ reasoning: { enabled: false } }).body).toMatchObject({ thinking: { type: 'disabled' } });
  });

  it("deepseek-v4-flash: DeepSeek's own thinking field from an OpenAI client is honoured, not forwarded raw", () => {
    const { body, droppedParameters } = build({ extensions: { thinking: { type: 'enabled' } } });
    expect(body.thinking).toEqual({ type: 'enabled' });
    expect(droppedParameters).toEqual([]);
    expect(build({ extensions: { thinking: 'yes please' } }).droppedParameters).toEqual(['thinking']);
  });

  it('sends log probabilities outside thinking mode, and never in it, where DeepSeek answers 400', () => {
    const logprobs = { topCandidates: 3, param: 'logprobs' };
    expect(build({ logprobs }).body).toMatchObject({ logprobs: true, top_logprobs: 3 });
    expect(build({ logprobs: { topCandidates: 0, param: 'logprobs' } }).body).not.toHaveProperty('top_logprobs');
    const thinking = build({ logprobs }, REASONER);
    expect(thinking.body).not.toHaveProperty('logprobs');
    expect(thinking.body).not.toHaveProperty('top_logprobs');
  });

  it('drops and reports every other extension, and all extensions of another client protocol', () => {
    const openai = build({ extensions: { logit_bias: { '42': 1 }, store: true, metadata: { a: 'b' } } });
    expect(openai.droppedParameters).toEqual(['logit_bias', 'store', 'metadata']);
    for (const field of ['logit_bias', 'store', 'metadata']) expect(openai.body).not.toHaveProperty(field);
    const anthropic = build({
      extensions: { logprobs: false, metadata: { user_id: 'u' } },
      extensionsProtocol: 'anthropic-messages',
    });
    expect(anthropic.droppedParameters).toEqual(['logprobs', 'metadata']);
    expect(anthropic.body).not.toHaveProperty('logprobs');
  });

  it('sends json_object as is', () => {
    const { body, droppedParameters } = build({ responseFormat: { type: 'json_object' } });
    expect(body.response_format).toEqual({ type: 'json_object' });
    expect(droppedParameters).toEqual([]);
  });

  it('downgrades json_schema to JSON mode plus a system instruction carrying the schema, and reports it', () => {
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
    const { body, droppedParameters } = build({
      system: [{ type: 'text', text: 'Be brief.' }],
      responseFormat: { type: 'json_schema', name: 'place', description: 'A city', schema, strict: true },
    });
    expect(body.response_format).toEqual({ type: 'json_object' });
    expect(droppedParameters).toEqual(['response_format.json_schema']);
    const messages = body.messages as Array<{ role: string; content: string }>;
    expect(messages).toHaveLength(2);
    expect(messages[0]!.role).toBe('system');
    expect(messages[0]!.content.startsWith('Be brief.\n\nReply with a single JSON object named "place"')).toBe(true);
    expect(messages[0]!.content).toContain('It is: A city');
    expect(messages[0]!.content).toContain(JSON.stringify(schema));
  });
});
