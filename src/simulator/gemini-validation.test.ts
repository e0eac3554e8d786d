import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callGemini } from './gemini-test-client.js';
import { startSimulator, type RunningSimulator } from './simulator-server.js';

let simulator: RunningSimulator;
beforeAll(async () => {
  simulator = await startSimulator();
});
afterAll(() => simulator.close());

type Body = Record<string, unknown>;
const user = { role: 'user', parts: [{ text: 'hi' }] };
const base: Body = { contents: [user] };
const TOOLS = [
  {
    functionDeclarations: [
      { name: 'get_weather', parameters: { type: 'OBJECT', properties: { city: { type: 'STRING' } } } },
      { name: 'get_time' },
    ],
  },
];
const callTurn = (...names: string[]): Body => ({
  role: 'model',
  parts: names.map((name) => ({ functionCall: { name, args: {} } })),
});
const responseTurn = (...names: string[]): Body => ({
  role: 'user',
  parts: names.map((name) => ({ functionResponse: { name, response: { output: 'ok' } } })),
});

/** Sends `body` and returns Gemini's INVALID_ARGUMENT message. */
async function refusal(body: unknown, model = 'gemini-2.5-flash'): Promise<string> {
  const { status, body: response } = await callGemini(simulator.baseUrls.gemini, model, 'generateContent', body);
  expect(status).toBe(400);
  expect(response.error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });
  return response.error?.message ?? '';
}

describe('Gemini simulator: request validation', () => {
  it('refuses a body that is not JSON', async () => {
    expect(await refusal('{"contents":')).toMatch(/^Invalid JSON payload received\./);
  });

  it('requires non-empty contents with user/model roles and non-empty parts', async () => {
    expect(await refusal({ contents: [] })).toBe('* GenerateContentRequest.contents: contents is not specified\n');
    expect(await refusal({})).toBe('* GenerateContentRequest.contents: contents is not specified\n');
    expect(await refusal({ contents: [{ role: 'assistant', parts: [{ text: 'x' }] }] })).toBe(
      'Please use a valid role: user, model.',
    );
    expect(await refusal({ contents: [{ role: 'user', parts: [] }] })).toBe(
      '* GenerateContentRequest.contents[0].parts: contents.parts must not be empty.\n',
    );
    expect(await refusal({ contents: [{ role: 'user', parts: [{ text: '' }] }] })).toBe(
      "* GenerateContentRequest.contents[0].parts[0].data: required oneof field 'data' must have one initialized field\n",
    );
    expect(await refusal({ contents: [user, user] })).toBe(
      'Please ensure that multiturn requests alternate between user and model.',
    );
  });

  it('refuses unknown field names, as proto3 JSON parsing does (OpenAI fields leaking through)', async () => {
    expect(await refusal({ ...base, max_tokens: 10 })).toBe(
      'Invalid JSON payload received. Unknown name "max_tokens": Cannot find field.',
    );
    expect(await refusal({ ...base, generationConfig: { maxTokens: 10 } })).toBe(
      'Invalid JSON payload received. Unknown name "maxTokens" at \'generation_config\': Cannot find field.',
    );
    expect(await refusal({ contents: [{ role: 'user', parts: [{ text: 'hi', type: 'text' }] }] })).toBe(
      'Invalid JSON payload received. Unknown name "type" at \'contents[0].parts[0]\': Cannot find field.',
    );
    expect(await refusal({ ...base, generationConfig: { temperature: 'hot' } })).toBe(
      'Invalid value at \'generation_config.temperature\' (TYPE_FLOAT), "hot"',
    );
  });

  it('refuses JSON-Schema-only keywords and type lists in function parameters', async () => {
    const declare = (parameters: object): Body => ({
      ...base,
      tools: [{ functionDeclarations: [{ name: 'f', parameters }] }],
    });
    expect(
      await refusal(declare({ type: 'object', properties: { a: { type: 'string' } }, additionalProperties: false })),
    ).toBe(
      'Invalid JSON payload received. Unknown name "additionalProperties" at \'tools[0].function_declarations[0].parameters\': Cannot find field.',
    );
    expect(await refusal(declare({ type: 'object', properties: { a: { type: ['string', 'null'] } } }))).toMatch(
      /^Invalid JSON payload received\. Unknown name "type" at 'tools\[0\]\.function_declarations\[0\]\.parameters\.properties\["a"\]\.value': Proto field is not repeating, cannot start list\.$/,
    );
    expect(await refusal(declare({ type: 'object', properties: {} }))).toBe(
      '* GenerateContentRequest.tools[0].function_declarations[0].parameters.properties: should be non-empty for OBJECT type\n',
    );
    expect(await refusal(declare({ type: 'object', properties: { a: { type: 'string' } }, required: ['b'] }))).toBe(
      '* GenerateContentRequest.tools[0].function_declarations[0].parameters.required[0]: property is not defined\n',
    );
    expect(await refusal({ ...base, tools: [{ functionDeclarations: [{ name: '9lives' }] }] })).toMatch(
      /function_declarations\[0\]\.name: Invalid function name\./,
    );
  });

  it('needs one function response per call of the preceding model turn, in one user content (one Gemini function response per call)', async () => {
    const message =
      'Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.';
    expect(
      await refusal({
        contents: [user, callTurn('get_weather', 'get_time'), responseTurn('get_weather')],
        tools: TOOLS,
      }),
    ).toBe(message);
    // Split over two user contents, as a gateway mapping one OpenAI tool message to one content would do.
    expect(
      await refusal({
        contents: [user, callTurn('get_weather', 'get_time'), responseTurn('get_weather'), responseTurn('get_time')],
        tools: TOOLS,
      }),
    ).toBe(message);
    expect(
      await refusal({
        contents: [user, callTurn('get_weather'), { role: 'user', parts: [{ text: 'never mind' }] }],
        tools: TOOLS,
      }),
    ).toBe(message);
    expect(await refusal({ contents: [responseTurn('get_weather')], tools: TOOLS })).toBe(
      'Please ensure that function response turn comes immediately after a function call turn.',
    );
  });

  it("needs each function response to carry its function's name (Gemini function response names)", async () => {
    const unnamed = { role: 'user', parts: [{ functionResponse: { response: { output: 'ok' } } }] };
    expect(await refusal({ contents: [user, callTurn('get_weather'), unnamed], tools: TOOLS })).toBe(
      '* GenerateContentRequest.contents[2].parts[0].function_response.name: Name cannot be empty.\n',
    );
    expect(
      await refusal({ contents: [user, callTurn('get_weather'), responseTurn('tool_call_result')], tools: TOOLS }),
    ).toMatch(/function_response\.name: Function response name 'tool_call_result' does not match any function call/);
  });

  it('checks generationConfig ranges and limits', async () => {
    const config = (generationConfig: object): Body => ({ ...base, generationConfig });
    expect(await refusal(config({ temperature: 3 }))).toBe(
      'Unable to submit request because it has a temperature value of 3 but the supported range is from 0 (inclusive) to 2.0001 (exclusive). Update the value and try again.',
    );
    expect(await refusal(config({ topP: 1.5 }))).toMatch(/topP value of 1.5/);
    expect(await refusal(config({ maxOutputTokens: 0 }))).toMatch(/maxOutputTokens value of 0/);
    expect(await refusal(config({ candidateCount: 2 }), 'gemini-3.5-flash')).toBe(
      'Multiple candidates is not enabled for this model',
    );
    expect(await refusal(config({ candidateCount: 9 }))).toMatch(/candidateCount value of 9/);
    expect(await refusal(config({ responseLogprobs: true, logprobs: 21 }))).toMatch(/logprobs value of 21/);
    expect(await refusal(config({ stopSequences: ['a', 'b', 'c', 'd', 'e', 'f'] }))).toMatch(
      /stop_sequences: at most 5/,
    );
    expect(await refusal(config({ responseMimeType: 'text/html' }))).toMatch(
      /response_mime_type: allowed mimetypes are/,
    );
  });

  it('checks thinking settings per model', async () => {
    const thinking = (thinkingConfig: object, model: string): Promise<string> =>
      refusal({ ...base, generationConfig: { thinkingConfig } }, model);
    expect(await thinking({ thinkingBudget: 0 }, 'gemini-2.5-pro')).toBe(
      'Budget 0 is invalid. This model only works in thinking mode.',
    );
    expect(await thinking({ thinkingBudget: 50_000 }, 'gemini-2.5-flash')).toMatch(
      /^The thinking budget 50000 is invalid/,
    );
    expect(await thinking({ thinkingLevel: 'HIGH' }, 'gemini-2.5-flash')).toMatch(/^Thinking level is not supported/);
    expect(await thinking({ thinkingLevel: 'HIGH', thinkingBudget: 1024 }, 'gemini-3-pro-preview')).toBe(
      'You can only set only one of thinking budget and thinking level.',
    );
    expect(await thinking({ includeThoughts: true }, 'gemini-2.0-flash')).toBe(
      'Thinking is not supported by models/gemini-2.0-flash.',
    );
  });

  it('requires a systemInstruction with text parts', async () => {
    expect(await refusal({ ...base, systemInstruction: { parts: [] } })).toBe(
      '* GenerateContentRequest.system_instruction.parts: contents.parts must not be empty.\n',
    );
    expect(await refusal({ ...base, systemInstruction: 'be brief' })).toMatch(/^Invalid value at 'system_instruction'/);
  });

  it('checks inline data: base64, supported MIME type, real image bytes', async () => {
    const inline = (mimeType: string, data: string): Body => ({
      contents: [{ role: 'user', parts: [{ text: 'see' }, { inlineData: { mimeType, data } }] }],
    });
    expect(await refusal(inline('image/png', 'not base64!'))).toBe(
      'Invalid value at \'contents[0].parts[1].inline_data.data\' (TYPE_BYTES), Base64 decoding failed for "not base64!"',
    );
    expect(await refusal(inline('image/bmp', 'AAAA'))).toBe('Unsupported MIME type: image/bmp');
    expect(await refusal(inline('image/png', 'AAAA'))).toMatch(/^Unable to process input image/);
    expect(await refusal(inline('application/pdf', 'AAAA'))).toBe('The document has no pages.');
  });

  it('reports bad simulator directives instead of ignoring them', async () => {
    expect(await refusal({ contents: [{ parts: [{ text: 'hi [[sim fault=explode]]' }] }] })).toMatch(
      /^Simulator directive: unknown fault 'explode'/,
    );
  });
});
