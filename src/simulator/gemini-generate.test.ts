import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callGemini, partsOf, textOf, type GeminiMethod } from './gemini-test-client.js';
import { startSimulator, type RunningSimulator } from './simulator-server.js';

let simulator: RunningSimulator;
beforeAll(async () => {
  simulator = await startSimulator({ apiKeys: ['test-key'] });
});
afterAll(() => simulator.close());

const tokens = (text: string): number => encode(text).length;
const MODEL = 'gemini-2.5-flash';
const userText = 'Write two lines about a lighthouse keeper and the sea';
const request = {
  systemInstruction: { parts: [{ text: 'You are terse.' }] },
  contents: [{ role: 'user', parts: [{ text: userText }] }],
};
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

const call = (method: GeminiMethod, body: unknown, options: Parameters<typeof callGemini>[4] = {}, model = MODEL) =>
  callGemini(simulator.baseUrls.gemini, model, method, body, options);

describe('Gemini simulator: replies', () => {
  it('answers generateContent with usageMetadata counted by the tokenizer', async () => {
    const { status, body } = await call('generateContent', request);
    expect(status).toBe(200);
    const text = textOf(body);
    expect(text.startsWith('You said: "Write two lines about a lighthouse keeper and ...".')).toBe(true);
    expect(body.candidates?.[0]).toMatchObject({ content: { role: 'model' }, finishReason: 'STOP', index: 0 });
    const prompt = 3 + tokens('You are terse.') + 3 + tokens(userText);
    expect(body.usageMetadata).toEqual({
      promptTokenCount: prompt,
      candidatesTokenCount: tokens(text),
      totalTokenCount: prompt + tokens(text),
      promptTokensDetails: [{ modality: 'TEXT', tokenCount: prompt }],
    });
    expect(body.modelVersion).toBe(MODEL);
    expect(body.responseId).toMatch(/^[0-9a-f]{22}$/);
  });

  it('streams CRLF-separated data events with the same text, usage and finishReason on the last chunk', async () => {
    const whole = await call('generateContent', request);
    const stream = await call('streamGenerateContent', request);
    expect(stream.headers.get('content-type')).toContain('text/event-stream');
    expect(stream.raw.startsWith('data: {')).toBe(true);
    expect(stream.raw.endsWith('}\r\n\r\n')).toBe(true);
    expect(stream.raw).not.toContain('event:');
    expect(stream.raw).not.toContain('[DONE]');
    expect(stream.chunks.length).toBeGreaterThan(5);
    expect(textOf(stream.chunks)).toBe(textOf(whole.body));
    const last = stream.chunks.at(-1);
    expect(last?.candidates?.[0]?.finishReason).toBe('STOP');
    expect(last?.usageMetadata).toEqual(whole.body.usageMetadata);
    for (const chunk of stream.chunks.slice(0, -1)) {
      expect(chunk.candidates?.[0]?.finishReason).toBeUndefined();
      expect(chunk.usageMetadata).toMatchObject({ promptTokenCount: whole.body.usageMetadata?.['promptTokenCount'] });
      expect([chunk.modelVersion, chunk.responseId]).toEqual([MODEL, whole.body.responseId]);
    }
  });

  it('streams a JSON array without alt=sse', async () => {
    const whole = await call('generateContent', request);
    const stream = await call('streamGenerateContent', request, { sse: false });
    expect(stream.headers.get('content-type')).toContain('application/json');
    expect(stream.raw.startsWith('[{')).toBe(true);
    expect(textOf(stream.chunks)).toBe(textOf(whole.body));
  });

  it('truncates at maxOutputTokens with MAX_TOKENS', async () => {
    const capped = { ...request, generationConfig: { maxOutputTokens: 9 } };
    const { body } = await call('generateContent', capped);
    expect(body.candidates?.[0]?.finishReason).toBe('MAX_TOKENS');
    expect(body.usageMetadata?.['candidatesTokenCount']).toBe(9);
    expect(tokens(textOf(body))).toBe(9);
    const stream = await call('streamGenerateContent', capped);
    expect(textOf(stream.chunks)).toBe(textOf(body));
    expect(stream.chunks.at(-1)?.candidates?.[0]?.finishReason).toBe('MAX_TOKENS');
  });

  it('stops at stop sequences with STOP, leaving them out', async () => {
    const prompt = { contents: [{ role: 'user', parts: [{ text: 'the fox [[sim words=30]]' }] }] };
    const full = textOf((await call('generateContent', prompt)).body);
    const { body } = await call('generateContent', { ...prompt, generationConfig: { stopSequences: ['fox'] } });
    expect(textOf(body)).toBe(full.slice(0, full.indexOf('fox')));
    expect(body.candidates?.[0]?.finishReason).toBe('STOP');
  });

  it('counts tokens with countTokens exactly as generation reports them', async () => {
    const rich = {
      ...request,
      contents: [
        { role: 'user', parts: [{ text: 'What is this?' }, { inlineData: { mimeType: 'image/png', data: PNG } }] },
      ],
      tools: [
        {
          functionDeclarations: [
            { name: 'lookup', parameters: { type: 'OBJECT', properties: { q: { type: 'STRING' } } } },
          ],
        },
      ],
    };
    const generated = (await call('generateContent', rich)).body.usageMetadata;
    const counted = await call('countTokens', { generateContentRequest: { model: `models/${MODEL}`, ...rich } });
    expect(counted.body).toMatchObject({ totalTokens: generated?.['promptTokenCount'] });
    expect(generated?.['promptTokensDetails']).toEqual(
      expect.arrayContaining([{ modality: 'IMAGE', tokenCount: 258 }]),
    );
    const bare = await call('countTokens', { contents: request.contents });
    expect(bare.body).toMatchObject({ totalTokens: 3 + tokens(userText) });
  });

  it('accepts snake_case field names, as proto3 JSON parsing does', async () => {
    const snake = {
      system_instruction: { parts: [{ text: 'You are terse.' }] },
      contents: request.contents,
      generation_config: { max_output_tokens: 9 },
    };
    const { status, body } = await call('generateContent', snake);
    expect(status).toBe(200);
    expect(body.candidates?.[0]?.finishReason).toBe('MAX_TOKENS');
    expect(textOf(body)).toBe(
      textOf((await call('generateContent', { ...request, generationConfig: { maxOutputTokens: 9 } })).body),
    );
  });

  it('reports simulated cache reads as cachedContentTokenCount (inside promptTokenCount)', async () => {
    const { body } = await call('generateContent', { contents: [{ parts: [{ text: 'hello [[sim cache-read=5]]' }] }] });
    expect(body.usageMetadata).toMatchObject({
      cachedContentTokenCount: 5,
      cacheTokensDetails: [{ modality: 'TEXT', tokenCount: 5 }],
    });
  });
});

describe('Gemini simulator: HTTP surface', () => {
  it('takes the key from x-goog-api-key or ?key=, refusing a missing or wrong one like Google', async () => {
    expect((await call('generateContent', request, { key: null, query: 'key=test-key' })).status).toBe(200);
    const missing = await call('generateContent', request, { key: null });
    expect(missing.status).toBe(403);
    expect(missing.body.error).toMatchObject({
      code: 403,
      status: 'PERMISSION_DENIED',
      message: expect.stringContaining('unregistered callers'),
    });
    const wrong = await call('generateContent', request, { key: 'nope' });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toMatchObject({
      status: 'INVALID_ARGUMENT',
      message: 'API key not valid. Please pass a valid API key.',
      details: [{ reason: 'API_KEY_INVALID' }],
    });
  });

  it('answers unknown models with NOT_FOUND and lists models', async () => {
    const unknown = await call('generateContent', request, {}, 'gpt-4o');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toMatchObject({
      code: 404,
      status: 'NOT_FOUND',
      message: expect.stringContaining('models/gpt-4o is not found for API version v1beta'),
    });
    const list = await fetch(`${simulator.baseUrls.gemini}/v1beta/models?key=test-key`);
    expect(((await list.json()) as { models: Array<{ name: string }> }).models.map((model) => model.name)).toContain(
      'models/gemini-2.5-flash',
    );
  });

  it('returns parts only when there are any: a reply cut before any text has none', async () => {
    const { body } = await call('generateContent', {
      ...request,
      generationConfig: { maxOutputTokens: 3, thinkingConfig: { thinkingBudget: 1024 } },
    });
    expect(body.candidates?.[0]).toMatchObject({ finishReason: 'MAX_TOKENS', content: { role: 'model' } });
    expect(partsOf(body)).toEqual([]);
    expect(body.usageMetadata).toMatchObject({ thoughtsTokenCount: 3 });
    expect(body.usageMetadata?.['candidatesTokenCount']).toBeUndefined();
  });
});
