import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../canonical/errors.js';
import type { CanonicalMessage, CanonicalRequest, ContentBlock } from '../../canonical/request.js';
import { PLACEHOLDER_THOUGHT_SIGNATURE } from './gemini-build-contents.js';
import { buildGeminiCountTokensRequest, buildGeminiRequest } from './gemini-build-request.js';
import { encodeGeminiToolCallId } from './gemini-tool-call-id.js';

function request(overrides: Partial<CanonicalRequest> = {}): CanonicalRequest {
  return {
    model: 'gamma-2.5-pro',
    system: [],
    messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }],
    sampling: {},
    stream: false,
    extensions: {},
    extensionsProtocol: 'openai-chat',
    ...overrides,
  };
}

const FLASH_25 = 'gemini-2.5-flash';
const PRO_25 = 'gemini-2.5-pro';
const FLASH_35 = 'gemini-3.5-flash';

function user(...content: ContentBlock[]): CanonicalMessage {
  return { role: 'user', content };
}
function assistant(...content: ContentBlock[]): CanonicalMessage {
  return { role: 'assistant', content };
}
function text(value: string): ContentBlock {
  return { type: 'text', text: value };
}
function call(id: string, name: string, argumentsJson: string): ContentBlock {
  return { type: 'tool-call', id, name, argumentsJson };
}
function result(toolCallId: string, output: string, isError = false): ContentBlock {
  return { type: 'tool-result', toolCallId, content: [{ type: 'text', text: output }], isError };
}

describe('buildGeminiRequest: system prompts, roles and merging', () => {
  it('puts leading system blocks into systemInstruction.parts and maps roles to user/model', () => {
    const { body } = buildGeminiRequest(
      request({
        system: [
          { type: 'text', text: 'You are a trip planner.' },
          { type: 'text', text: 'Be brief.' },
        ],
        messages: [user(text('Rain in Lisbon?')), assistant(text('Some.')), user(text('Thanks'))],
      }),
      FLASH_25,
    );
    expect(body.systemInstruction).toEqual({ parts: [{ text: 'You are a trip planner.' }, { text: 'Be brief.' }] });
    expect(body.contents).toEqual([
      { role: 'user', parts: [{ text: 'Rain in Lisbon?' }] },
      { role: 'model', parts: [{ text: 'Some.' }] },
      { role: 'user', parts: [{ text: 'Thanks' }] },
    ]);
  });

  it('keeps a mid-conversation system message in place as marked user text (policy), merged with its neighbours', () => {
    const { body } = buildGeminiRequest(
      request({
        messages: [
          user(text('One')),
          assistant(text('Two')),
          { role: 'system', content: [text('Answer in French.')] },
          user(text('Three')),
        ],
      }),
      FLASH_25,
    );
    expect(body.systemInstruction).toBeUndefined();
    expect(body.contents[2]).toEqual({
      role: 'user',
      parts: [{ text: '[System message]\nAnswer in French.' }, { text: 'Three' }],
    });
  });

  it('merges consecutive same-role contents and drops empty text and emptied messages', () => {
    const { body } = buildGeminiRequest(
      request({
        messages: [
          user(text('a')),
          user(text(''), text('b')),
          // Only foreign reasoning: nothing left for Gemini, so the neighbours meet and merge.
          assistant({ type: 'reasoning', text: 'hmm', signature: 'sig', originVendor: 'anthropic' }),
          user(text('c')),
          assistant(text('x')),
          assistant(text('y')),
        ],
      }),
      FLASH_25,
    );
    expect(body.contents).toEqual([
      { role: 'user', parts: [{ text: 'a' }, { text: 'b' }, { text: 'c' }] },
      { role: 'model', parts: [{ text: 'x' }, { text: 'y' }] },
    ]);
  });
});

describe('buildGeminiRequest: images and documents', () => {
  it('sends base64 as inlineData and URLs as fileData with a MIME type guessed from the extension', () => {
    const { body, droppedParameters } = buildGeminiRequest(
      request({
        messages: [
          user(
            { type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: 'iVBORw0KGgo=' }, detail: 'high' },
            { type: 'image', source: { kind: 'url', url: 'https://example.com/cat.WEBP?size=large' } },
            { type: 'image', source: { kind: 'url', url: 'https://example.com/render' } },
            {
              type: 'document',
              source: { kind: 'base64', mediaType: 'application/pdf', data: 'JVBERi0=' },
              title: 'Report',
            },
            { type: 'document', source: { kind: 'url', url: 'https://example.com/notes.txt' } },
            { type: 'document', source: { kind: 'url', url: 'https://example.com/download?id=7' } },
          ),
        ],
      }),
      FLASH_25,
    );
    expect(body.contents[0]!.parts).toEqual([
      { inlineData: { mimeType: 'image/png', data: 'iVBORw0KGgo=' } },
      { fileData: { mimeType: 'image/webp', fileUri: 'https://example.com/cat.WEBP?size=large' } },
      // Unknown extension: an image falls back to JPEG, a document to PDF.
      { fileData: { mimeType: 'image/jpeg', fileUri: 'https://example.com/render' } },
      { inlineData: { mimeType: 'application/pdf', data: 'JVBERi0=' } },
      { fileData: { mimeType: 'text/plain', fileUri: 'https://example.com/notes.txt' } },
      { fileData: { mimeType: 'application/pdf', fileUri: 'https://example.com/download?id=7' } },
    ]);
    expect(droppedParameters).toContain('detail');
  });
});

describe('buildGeminiRequest: tools and tool choice', () => {
  const tools = [
    {
      name: 'lookup_weather',
      description: 'Current weather for a city',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string' }, unit: { anyOf: [{ enum: ['C', 'F'] }, { type: 'null' }] } },
        required: ['city'],
        additionalProperties: false,
      },
      strict: true,
    },
    { name: 'get_time', parameters: { type: 'object', properties: {} } },
  ];

  it('declares every tool in tools[0].functionDeclarations with its JSON Schema as written (parametersJsonSchema)', () => {
    const { body, droppedParameters } = buildGeminiRequest(
      request({ tools: [...tools, { name: 'no_args' }] }),
      FLASH_25,
    );
    expect(body.tools).toEqual([
      {
        functionDeclarations: [
          {
            name: 'lookup_weather',
            description: 'Current weather for a city',
            parametersJsonSchema: tools[0]!.parameters,
          },
          { name: 'get_time', parametersJsonSchema: { type: 'object', properties: {} } },
          { name: 'no_args' },
        ],
      },
    ]);
    expect(body.toolConfig).toBeUndefined();
    expect(droppedParameters).toContain('strict');
  });

  it.each([
    [{ type: 'auto' } as const, { mode: 'AUTO' }],
    [{ type: 'none' } as const, { mode: 'NONE' }],
    [{ type: 'required' } as const, { mode: 'ANY' }],
    [{ type: 'tool', name: 'get_time' } as const, { mode: 'ANY', allowedFunctionNames: ['get_time'] }],
  ])('maps tool choice %j to functionCallingConfig %j', (toolChoice, functionCallingConfig) => {
    expect(buildGeminiRequest(request({ tools, toolChoice }), FLASH_25).body.toolConfig).toEqual({
      functionCallingConfig,
    });
  });

  it('sends no toolConfig when there are no tools to choose from', () => {
    expect(buildGeminiRequest(request({ toolChoice: { type: 'required' } }), FLASH_25).body.toolConfig).toBeUndefined();
  });
});

describe('buildGeminiRequest: tool calls and results (Gemini thought signatures on calls, one Gemini function response per call, Gemini function response names)', () => {
  it('sends tool calls as functionCall parts with args as an object ("" → {}, non-object → {_raw})', () => {
    const { body } = buildGeminiRequest(
      request({
        messages: [
          user(text('go')),
          assistant(text('Calling.'), call('a', 'f', '{"x":1}'), call('b', 'g', ''), call('c', 'h', '{"x":')),
          user(result('a', '1'), result('b', '2'), result('c', '3')),
        ],
      }),
      FLASH_25,
    );
    expect(body.contents[1]).toEqual({
      role: 'model',
      parts: [
        { text: 'Calling.' },
        { functionCall: { name: 'f', args: { x: 1 } } },
        { functionCall: { name: 'g', args: {} } },
        { functionCall: { name: 'h', args: { _raw: '{"x":' } } },
      ],
    });
  });

  it('one Gemini function response per call: puts all results of a step in ONE user content, exactly one response per call, in call order, before other parts', () => {
    // The shape an OpenAI client produces: tool messages (here two canonical user messages), then a user message.
    const { body } = buildGeminiRequest(
      request({
        messages: [
          user(text('Time in UTC and JST?')),
          assistant(call('call_1', 'get_time', '{"tz":"UTC"}'), call('call_2', 'get_time', '{"tz":"JST"}')),
          user(result('call_2', '18:00')),
          user(result('call_1', '09:00')),
          user(text('Which is later?')),
        ],
      }),
      FLASH_25,
    );
    expect(body.contents).toHaveLength(3);
    expect(body.contents[2]).toEqual({
      role: 'user',
      parts: [
        { functionResponse: { name: 'get_time', response: { output: '09:00' } } },
        { functionResponse: { name: 'get_time', response: { output: '18:00' } } },
        { text: 'Which is later?' },
      ],
    });
  });

  it('one Gemini function response per call: a call the client sent no result for still gets exactly one (error) response', () => {
    const { body } = buildGeminiRequest(
      request({
        messages: [
          user(text('go')),
          assistant(call('a', 'f', '{}'), call('b', 'g', '{}')),
          user(result('a', 'done')),
          user(text('never mind b')),
        ],
      }),
      FLASH_25,
    );
    expect(body.contents[2]!.parts).toEqual([
      { functionResponse: { name: 'f', response: { output: 'done' } } },
      { functionResponse: { name: 'g', response: { error: 'The client sent no result for this call.' } } },
      { text: 'never mind b' },
    ]);
  });

  it('Gemini function response names: names each functionResponse after the call with the same tool-call id, never a filler name', () => {
    const { body } = buildGeminiRequest(
      request({
        messages: [
          user(text('go')),
          assistant(call('toolu_9', 'read_file', '{"path":"/a"}'), call('toolu_10', 'screenshot', '{}')),
          user(
            {
              type: 'tool-result',
              toolCallId: 'toolu_9',
              content: [text('file not found') as { type: 'text'; text: string }],
              isError: true,
            },
            {
              type: 'tool-result',
              toolCallId: 'toolu_10',
              content: [{ type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: 'iVBORw0=' } }],
              isError: false,
            },
            text('Try the backup path.'),
          ),
        ],
      }),
      FLASH_25,
    );
    // docs/protocols/translation.md#tool-results's worked example.
    expect(body.contents[2]).toEqual({
      role: 'user',
      parts: [
        { functionResponse: { name: 'read_file', response: { error: 'file not found' } } },
        { functionResponse: { name: 'screenshot', response: { output: 'The tool returned the attached image.' } } },
        { inlineData: { mimeType: 'image/png', data: 'iVBORw0=' } },
        { text: 'Try the backup path.' },
      ],
    });
  });

  it('sends result text as {output: text} without parsing it, even when it is JSON (policy)', () => {
    const { body } = buildGeminiRequest(
      request({
        messages: [user(text('go')), assistant(call('a', 'f', '{}')), user(result('a', '{"id":12345678901234567890}'))],
      }),
      FLASH_25,
    );
    expect(body.contents[2]!.parts[0]).toEqual({
      functionResponse: { name: 'f', response: { output: '{"id":12345678901234567890}' } },
    });
  });

  it('refuses a tool result that answers no call of the preceding assistant message', () => {
    const build = () =>
      buildGeminiRequest(
        request({
          messages: [
            user(text('go')),
            assistant(call('a', 'f', '{}')),
            user(result('a', 'ok'), result('zzz', 'stray')),
          ],
        }),
        FLASH_25,
      );
    expect(build).toThrow(GatewayError);
    expect(build).toThrow(/'zzz'/);
  });

  it('Gemini thought signatures on calls: restores thoughtSignature and Gemini’s own call id from the tool-call id, on the call and its response', () => {
    const signed = encodeGeminiToolCallId({ geminiId: 'fc-7', thoughtSignature: 'CpYBAb4+9vt/sig==' }, 'abc123');
    const unsigned = encodeGeminiToolCallId({}, 'def456');
    const { body } = buildGeminiRequest(
      request({
        messages: [
          user(text('go')),
          assistant(
            call(signed, 'lookup_weather', '{"city":"Lisbon"}'),
            call(unsigned, 'lookup_weather', '{"city":"Porto"}'),
          ),
          user(result(signed, 'rain'), result(unsigned, 'sun')),
        ],
      }),
      FLASH_35,
    );
    expect(body.contents[1]!.parts).toEqual([
      {
        functionCall: { name: 'lookup_weather', args: { city: 'Lisbon' }, id: 'fc-7' },
        thoughtSignature: 'CpYBAb4+9vt/sig==',
      },
      // Parallel calls: only the first carries a signature, as Gemini sent them.
      { functionCall: { name: 'lookup_weather', args: { city: 'Porto' } } },
    ]);
    expect(body.contents[2]!.parts).toEqual([
      { functionResponse: { name: 'lookup_weather', response: { output: 'rain' }, id: 'fc-7' } },
      { functionResponse: { name: 'lookup_weather', response: { output: 'sun' } } },
    ]);
  });

  it('Gemini thought signatures on calls: on Gemini 3 a step whose first call has no signature (foreign history) gets the documented placeholder; not on 2.5', () => {
    const messages = [
      user(text('go')),
      assistant(call('toolu_1', 'f', '{}'), call('toolu_2', 'f', '{}')),
      user(result('toolu_1', 'a'), result('toolu_2', 'b')),
    ];
    const gemini3 = buildGeminiRequest(request({ messages }), FLASH_35).body.contents[1]!.parts;
    expect(gemini3[0]!.thoughtSignature).toBe(PLACEHOLDER_THOUGHT_SIGNATURE);
    expect(gemini3[1]!.thoughtSignature).toBeUndefined();
    const gemini25 = buildGeminiRequest(request({ messages }), FLASH_25).body.contents[1]!.parts;
    expect(gemini25.some((part) => part.thoughtSignature !== undefined)).toBe(false);
  });

  it('reasoning replayed only to its vendor: replays reasoning as a thought part only when Gemini signed it; unsigned and foreign reasoning is dropped', () => {
    const { body } = buildGeminiRequest(
      request({
        messages: [
          user(text('go')),
          assistant(
            { type: 'reasoning', text: 'Gemini thought', signature: 'R2VtaW5p', originVendor: 'gemini' },
            { type: 'reasoning', text: 'Claude thought', signature: 'EqQBCkgI', originVendor: 'anthropic' },
            { type: 'reasoning', text: 'DeepSeek thought' },
            { type: 'reasoning', text: '', redactedData: 'opaque', originVendor: 'anthropic' },
            text('Answer.'),
          ),
        ],
      }),
      FLASH_25,
    );
    expect(body.contents[1]!.parts).toEqual([
      { text: 'Gemini thought', thought: true, thoughtSignature: 'R2VtaW5p' },
      { text: 'Answer.' },
    ]);
  });
});

describe('buildGeminiRequest: generationConfig', () => {
  it('maps sampling and max output, never sending candidateCount', () => {
    const { body } = buildGeminiRequest(
      request({
        sampling: {
          temperature: 0.4,
          topP: 0.9,
          topK: 40,
          stop: ['END'],
          seed: 7,
          presencePenalty: 0.5,
          frequencyPenalty: -0.5,
        },
        maxOutputTokens: 1024,
      }),
      FLASH_25,
    );
    expect(body.generationConfig).toEqual({
      temperature: 0.4,
      topP: 0.9,
      topK: 40,
      stopSequences: ['END'],
      seed: 7,
      presencePenalty: 0.5,
      frequencyPenalty: -0.5,
      maxOutputTokens: 1024,
    });
  });

  it('sends no generationConfig when nothing was asked', () => {
    expect(buildGeminiRequest(request(), FLASH_25).body.generationConfig).toBeUndefined();
  });

  it('maps json_object to responseMimeType and json_schema to responseJsonSchema as written', () => {
    expect(
      buildGeminiRequest(request({ responseFormat: { type: 'json_object' } }), FLASH_25).body.generationConfig,
    ).toEqual({ responseMimeType: 'application/json' });
    expect(
      buildGeminiRequest(request({ responseFormat: { type: 'text' } }), FLASH_25).body.generationConfig,
    ).toBeUndefined();
    expect(
      buildGeminiRequest(request({ responseFormat: { type: 'json_schema', name: 'any', schema: {} } }), FLASH_25).body
        .generationConfig,
    ).toEqual({
      responseMimeType: 'application/json',
    });
    const { body } = buildGeminiRequest(
      request({
        responseFormat: {
          type: 'json_schema',
          name: 'verdict',
          strict: true,
          schema: {
            type: 'object',
            properties: { reasoning: { type: 'string' }, answer: { type: 'string' } },
            required: ['reasoning', 'answer'],
            additionalProperties: false,
          },
        },
      }),
      FLASH_25,
    );
    expect(body.generationConfig).toEqual({
      responseMimeType: 'application/json',
      responseJsonSchema: {
        type: 'object',
        properties: { reasoning: { type: 'string' }, answer: { type: 'string' } },
        required: ['reasoning', 'answer'],
        additionalProperties: false,
      },
    });
  });
});

describe('buildGeminiRequest: reasoning → thinkingConfig', () => {
  const thinking = (reasoning: CanonicalRequest['reasoning'], model: string) =>
    buildGeminiRequest(request({ reasoning }), model).body.generationConfig?.thinkingConfig;

  it.each([
    ['minimal', 128],
    ['low', 1024],
    ['medium', 2048],
    ['high', 4096],
    ['xhigh', 16_384],
    ['max', 24_576],
  ])('2.5: effort %s → thinkingBudget %i with thoughts included', (effort, thinkingBudget) => {
    expect(thinking({ effort }, FLASH_25)).toEqual({ includeThoughts: true, thinkingBudget });
  });

  it('2.5: effort none and enabled false turn thinking off (budget 0) where allowed; Pro cannot, so it gets its minimum', () => {
    expect(thinking({ effort: 'none' }, FLASH_25)).toEqual({ thinkingBudget: 0 });
    expect(thinking({ enabled: false }, FLASH_25)).toEqual({ thinkingBudget: 0 });
    expect(thinking({ enabled: false }, PRO_25)).toEqual({ thinkingBudget: 128 });
    expect(thinking({ effort: 'max' }, PRO_25)).toEqual({ includeThoughts: true, thinkingBudget: 32_768 });
  });

  it('budgetTokens → thinkingBudget, clamped to the model range, winning over effort', () => {
    expect(thinking({ enabled: true, budgetTokens: 5000 }, FLASH_25)).toEqual({
      includeThoughts: true,
      thinkingBudget: 5000,
    });
    expect(thinking({ enabled: true, budgetTokens: 64_000 }, FLASH_25)).toEqual({
      includeThoughts: true,
      thinkingBudget: 24_576,
    });
    expect(thinking({ budgetTokens: 64, effort: 'high' }, PRO_25)).toEqual({
      includeThoughts: true,
      thinkingBudget: 128,
    });
    expect(thinking({ enabled: true, budgetTokens: 3000 }, FLASH_35)).toEqual({
      includeThoughts: true,
      thinkingBudget: 3000,
    });
  });

  it.each([
    ['minimal', 'MINIMAL'],
    ['low', 'LOW'],
    ['medium', 'MEDIUM'],
    ['high', 'HIGH'],
    ['max', 'HIGH'],
  ])('3.x: effort %s → thinkingLevel %s', (effort, thinkingLevel) => {
    expect(thinking({ effort }, FLASH_35)).toEqual({ includeThoughts: true, thinkingLevel });
  });

  it('3.x: off is the lowest level (no off switch); Pro levels collapse to LOW/HIGH', () => {
    expect(thinking({ effort: 'none' }, FLASH_35)).toEqual({ thinkingLevel: 'MINIMAL' });
    expect(thinking({ enabled: false }, 'gemini-3-pro-preview')).toEqual({ thinkingLevel: 'LOW' });
    expect(thinking({ effort: 'medium' }, 'gemini-3-pro-preview')).toEqual({
      includeThoughts: true,
      thinkingLevel: 'HIGH',
    });
  });

  it('reasoning enabled without a size includes thoughts at the model default; no reasoning parameters, no thinkingConfig', () => {
    expect(thinking({ enabled: true }, FLASH_25)).toEqual({ includeThoughts: true });
    expect(thinking(undefined, FLASH_25)).toBeUndefined();
  });
});

describe('buildGeminiRequest: dropped parameters', () => {
  it('reports parameters with no Gemini slot and every client-protocol extension', () => {
    const { body, droppedParameters } = buildGeminiRequest(
      request({
        user: 'u-1',
        parallelToolCalls: false,
        extensions: { logit_bias: { 1: 2 }, store: true },
        messages: [{ role: 'user', content: [text('hi')], name: 'alice' }],
      }),
      FLASH_25,
    );
    expect([...droppedParameters].sort()).toEqual(['logit_bias', 'name', 'parallel_tool_calls', 'store', 'user']);
    expect(JSON.stringify(body)).not.toContain('logit_bias');
    expect(JSON.stringify(body)).not.toContain('u-1');
  });
});

describe('buildGeminiCountTokensRequest', () => {
  it('wraps the prompt side (contents, system, tools) in generateContentRequest with the model resource name', () => {
    const body = buildGeminiCountTokensRequest(
      request({
        system: [{ type: 'text', text: 'Be brief.' }],
        tools: [{ name: 'f', parameters: { type: 'object', properties: { a: { type: 'string' } } } }],
        sampling: { temperature: 1 },
      }),
      FLASH_25,
    );
    expect(body).toEqual({
      generateContentRequest: {
        model: 'models/gemini-2.5-flash',
        contents: [{ role: 'user', parts: [{ text: 'Hi' }] }],
        systemInstruction: { parts: [{ text: 'Be brief.' }] },
        tools: [
          {
            functionDeclarations: [
              { name: 'f', parametersJsonSchema: { type: 'object', properties: { a: { type: 'string' } } } },
            ],
          },
        ],
      },
    });
  });
});

describe('buildGeminiRequest: fields Gemini honours', () => {
  it('sends candidateCount, responseLogprobs and logprobs', () => {
    const { body } = buildGeminiRequest(
      request({ choices: { count: 2, param: 'n' }, logprobs: { topCandidates: 3, param: 'logprobs' } }),
      PRO_25,
    );
    expect(body.generationConfig).toMatchObject({ candidateCount: 2, responseLogprobs: true, logprobs: 3 });
    const noTop = buildGeminiRequest(request({ logprobs: { topCandidates: 0, param: 'logprobs' } }), PRO_25).body;
    expect(noTop.generationConfig).not.toHaveProperty('logprobs');
  });

  it('sends VALIDATED mode as VALIDATED', () => {
    const tools = [{ name: 'get_time', parameters: { type: 'object' } }];
    const { body } = buildGeminiRequest(request({ tools, toolChoice: { type: 'auto', validated: true } }), FLASH_25);
    expect(body.toolConfig).toEqual({ functionCallingConfig: { mode: 'VALIDATED' } });
  });

  it("a Gemini client's unknown top-level fields are dropped and reported; known ones go as written", () => {
    const { body, droppedParameters } = buildGeminiRequest(
      request({
        extensionsProtocol: 'gemini-generate',
        extensions: { labels: { team: 'a' }, safetySettings: [], 'generationConfig.mediaResolution': 'LOW' },
      }),
      FLASH_25,
    );
    expect(body).not.toHaveProperty('labels');
    expect(body).toMatchObject({ safetySettings: [], generationConfig: { mediaResolution: 'LOW' } });
    expect(droppedParameters).toEqual(['labels']);
  });

  it('safety_identifier has no Gemini slot: dropped and reported', () => {
    expect(buildGeminiRequest(request({ safetyIdentifier: 'hash' }), FLASH_25).droppedParameters).toEqual([
      'safety_identifier',
    ]);
  });
});
