import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callGemini, partsOf, textOf, type GeminiMethod, type GeminiPartOut } from './gemini-test-client.js';
import { startSimulator, type RunningSimulator } from './simulator-server.js';

let simulator: RunningSimulator;
beforeAll(async () => {
  simulator = await startSimulator();
});
afterAll(() => simulator.close());

const TOOLS = [
  {
    functionDeclarations: [
      {
        name: 'get_weather',
        description: 'Current weather for a city',
        parameters: {
          type: 'OBJECT',
          properties: { city: { type: 'STRING' }, unit: { type: 'STRING', enum: ['celsius', 'fahrenheit'] } },
          required: ['city'],
        },
      },
      {
        name: 'get_time',
        parametersJsonSchema: { type: 'object', properties: { zone: { type: 'string' } }, additionalProperties: false },
      },
    ],
  },
];

type Content = { role: string; parts: object[] };
const ask = (text: string, extra: object = {}): { contents: Content[]; tools: typeof TOOLS } => ({
  contents: [{ role: 'user', parts: [{ text }] }],
  tools: TOOLS,
  ...extra,
});
const call = (model: string, method: GeminiMethod, body: unknown) =>
  callGemini(simulator.baseUrls.gemini, model, method, body);

/** The conversation continued with the model turn and one function response per call. */
function withResponses(
  request: { contents: Content[] },
  modelParts: GeminiPartOut[],
  output = 'light rain, 14°C',
): Content[] {
  const responses = modelParts.flatMap((part) =>
    part.functionCall === undefined
      ? []
      : [{ functionResponse: { name: part.functionCall.name, response: { output } } }],
  );
  return [...request.contents, { role: 'model', parts: modelParts }, { role: 'user', parts: responses }];
}

describe('Gemini simulator: function calling', () => {
  it('calls the function named by the directive, with STOP as the finish reason (Gemini STOP after tool calls) and no id', async () => {
    const { body } = await call(
      'gemini-2.5-flash',
      'generateContent',
      ask('What is the weather in Lisbon? [[sim tool=get_weather]]'),
    );
    expect(body.candidates?.[0]?.finishReason).toBe('STOP');
    expect(partsOf(body)).toEqual([
      { functionCall: { name: 'get_weather', args: { city: 'Lisbon', unit: 'celsius' } } },
    ]);
  });

  it('streams each call whole in its own chunk, then STOP on a trailing chunk with an empty text part', async () => {
    const request = ask('Weather and time in Lisbon? [[sim tool=get_weather,get_time tool-text=1]]');
    const whole = await call('gemini-2.5-flash', 'generateContent', request);
    expect(partsOf(whole.body).map((part) => Object.keys(part)[0])).toEqual(['text', 'functionCall', 'functionCall']);
    expect(textOf(whole.body)).toBe('I will call get_weather and get_time.');
    const stream = await call('gemini-2.5-flash', 'streamGenerateContent', request);
    const callChunks = stream.chunks.filter((chunk) => partsOf(chunk).some((part) => part.functionCall !== undefined));
    expect(callChunks.map((chunk) => partsOf(chunk).map((part) => part.functionCall?.name))).toEqual([
      ['get_weather'],
      ['get_time'],
    ]);
    expect(callChunks.every((chunk) => chunk.candidates?.[0]?.finishReason === undefined)).toBe(true);
    expect(stream.chunks.at(-1)?.candidates?.[0]).toMatchObject({
      finishReason: 'STOP',
      content: { parts: [{ text: '' }] },
    });
    expect(stream.chunks.at(-1)?.usageMetadata).toEqual(whole.body.usageMetadata);
    expect(textOf(stream.chunks)).toBe(textOf(whole.body));
  });

  it('follows functionCallingConfig: ANY forces a call (among allowedFunctionNames), NONE forbids it', async () => {
    const any = await call(
      'gemini-2.5-flash',
      'generateContent',
      ask('Just talk', { toolConfig: { functionCallingConfig: { mode: 'ANY' } } }),
    );
    expect(partsOf(any.body).map((part) => part.functionCall?.name)).toEqual(['get_weather']);
    const allowed = await call(
      'gemini-2.5-flash',
      'generateContent',
      ask('Just talk', { toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_time'] } } }),
    );
    expect(partsOf(allowed.body).map((part) => part.functionCall?.name)).toEqual(['get_time']);
    const none = await call(
      'gemini-2.5-flash',
      'generateContent',
      ask('Lisbon [[sim tool=get_weather]]', { toolConfig: { functionCallingConfig: { mode: 'NONE' } } }),
    );
    expect(partsOf(none.body).every((part) => part.functionCall === undefined)).toBe(true);
  });

  it('answers the function-response turn with text quoting the results', async () => {
    const request = ask('Weather in Lisbon? [[sim tool=get_weather]]');
    const first = await call('gemini-2.5-flash', 'generateContent', request);
    const followUp = await call('gemini-2.5-flash', 'generateContent', {
      ...request,
      contents: withResponses(request, partsOf(first.body)),
    });
    expect(followUp.status).toBe(200);
    expect(textOf(followUp.body).startsWith('Tool results: "light rain, 14°C".')).toBe(true);
  });

  it('refuses a directive naming an undeclared function', async () => {
    const { status, body } = await call('gemini-2.5-flash', 'generateContent', ask('hi [[sim tool=get_stock]]'));
    expect(status).toBe(400);
    expect(body.error).toMatchObject({
      status: 'INVALID_ARGUMENT',
      message: expect.stringContaining("tool 'get_stock' is not among the request's tools"),
    });
  });
});

describe('Gemini simulator: thinking and thought signatures', () => {
  it('does not think on 2.5 by default; thinks with a positive thinkingBudget, showing thoughts only with includeThoughts', async () => {
    const plain = await call('gemini-2.5-flash', 'generateContent', ask('Explain tides'));
    expect(plain.body.usageMetadata?.['thoughtsTokenCount']).toBeUndefined();
    const hidden = await call(
      'gemini-2.5-flash',
      'generateContent',
      ask('Explain tides', { generationConfig: { thinkingConfig: { thinkingBudget: 1024 } } }),
    );
    const thoughts = hidden.body.usageMetadata?.['thoughtsTokenCount'] as number;
    expect(thoughts).toBeGreaterThan(5);
    expect(partsOf(hidden.body).some((part) => part.thought === true)).toBe(false);
    const shown = await call(
      'gemini-2.5-flash',
      'generateContent',
      ask('Explain tides', { generationConfig: { thinkingConfig: { thinkingBudget: 1024, includeThoughts: true } } }),
    );
    const [thought, answer] = partsOf(shown.body);
    expect(thought).toMatchObject({ thought: true, text: expect.stringMatching(/^Thinking about "Explain tides"\./) });
    expect(answer?.thoughtSignature).toBeDefined(); // no calls: the last part is signed
    const usage = shown.body.usageMetadata ?? {};
    // Thoughts are beside the candidates, and inside the total
    // (docs/protocols/translation.md#gemini-thoughts-count-as-output).
    expect(usage['totalTokenCount']).toBe(
      (usage['promptTokenCount'] as number) + (usage['candidatesTokenCount'] as number) + thoughts,
    );
    const stream = await call(
      'gemini-2.5-flash',
      'streamGenerateContent',
      ask('Explain tides', { generationConfig: { thinkingConfig: { thinkingBudget: 1024, includeThoughts: true } } }),
    );
    const firstAnswer = stream.chunks.findIndex((chunk) => partsOf(chunk).some((part) => part.thought !== true));
    expect(
      stream.chunks.slice(0, firstAnswer).every((chunk) => partsOf(chunk).every((part) => part.thought === true)),
    ).toBe(true);
    expect(stream.chunks.at(-1)?.usageMetadata).toEqual(usage);
  });

  it('signs the first call of a step on thinking models (only the first of parallel calls)', async () => {
    const { body } = await call(
      'gemini-3-pro-preview',
      'generateContent',
      ask('Lisbon? [[sim tool=get_weather,get_time]]'),
    );
    const [first, second] = partsOf(body);
    expect(first?.thoughtSignature).toMatch(/^[A-Za-z0-9+/]+=*$/);
    expect(second?.thoughtSignature).toBeUndefined();
    expect(body.usageMetadata?.['thoughtsTokenCount']).toBeGreaterThan(0);
  });

  it('accepts the Gemini 3 tool loop replayed with its signature', async () => {
    const request = ask('Lisbon? [[sim tool=get_weather,get_time]]');
    const first = await call('gemini-3-pro-preview', 'generateContent', request);
    const followUp = await call('gemini-3-pro-preview', 'generateContent', {
      ...request,
      contents: withResponses(request, partsOf(first.body)),
    });
    expect(followUp.status).toBe(200);
    expect(textOf(followUp.body)).toMatch(/^Tool results:/);
  });

  it('refuses a Gemini 3 call replayed without its thought signature (Gemini thought signatures on calls)', async () => {
    const request = ask('Lisbon? [[sim tool=get_weather]]');
    const first = await call('gemini-3-pro-preview', 'generateContent', request);
    const unsigned = partsOf(first.body).map(({ thoughtSignature: _dropped, ...part }) => part);
    const refused = await call('gemini-3-pro-preview', 'generateContent', {
      ...request,
      contents: withResponses(request, unsigned),
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({
      status: 'INVALID_ARGUMENT',
      message: expect.stringMatching(
        /^Function call is missing a thought_signature in functionCall parts\..*`get_weather` , position 1/,
      ),
    });
    // 2.5 models do not enforce it; the documented placeholder passes on 3.
    expect(
      (await call('gemini-2.5-flash', 'generateContent', { ...request, contents: withResponses(request, unsigned) }))
        .status,
    ).toBe(200);
    const placeholder = unsigned.map((part) => ({ ...part, thoughtSignature: 'skip_thought_signature_validator' }));
    expect(
      (
        await call('gemini-3-pro-preview', 'generateContent', {
          ...request,
          contents: withResponses(request, placeholder),
        })
      ).status,
    ).toBe(200);
  });

  it('refuses a foreign signature, or one moved onto a different call (reasoning replayed only to its vendor)', async () => {
    const request = ask('Lisbon? [[sim tool=get_weather]]');
    const first = await call('gemini-3-pro-preview', 'generateContent', request);
    const [part] = partsOf(first.body);
    const foreign = [{ ...part, thoughtSignature: Buffer.from('anthropic-signature-bytes').toString('base64') }];
    const refused = await call('gemini-3-pro-preview', 'generateContent', {
      ...request,
      contents: withResponses(request, foreign),
    });
    expect([refused.status, refused.body.error?.message]).toEqual([400, 'Corrupted thought signature.']);
    const altered = [{ ...part, functionCall: { name: 'get_weather', args: { city: 'Porto' } } }];
    const moved = await call('gemini-3-pro-preview', 'generateContent', {
      ...request,
      contents: withResponses(request, altered),
    });
    expect(moved.body.error?.message).toBe('Corrupted thought signature.');
  });
});
