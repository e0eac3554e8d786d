/**
 * Fields a vendor honours reach it in its own form, and fields it would refuse are left out and reported rather than
 * failing the request: Responses log probabilities, Anthropic sampling fields by Claude model, Gemini's unknown
 * top-level fields and VALIDATED mode. The simulator answers each as its vendor does (a 400 for what it refuses).
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

let harness: TestGateway;
let key: string;
let openai: OpenAI;
let anthropic: Anthropic;

beforeAll(async () => {
  harness = await startTestGateway();
  ({ key } = await harness.createAccountWithKey(undefined, 'pro'));
  openai = new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
  anthropic = new Anthropic({ apiKey: key, baseURL: harness.gateway.url, maxRetries: 0 });
});

afterAll(async () => {
  await harness?.close();
});

describe('Responses log probabilities', () => {
  it('a whole reply: output_text.logprobs spell the text, with top_logprobs alternatives', async () => {
    const response = await openai.responses.create({
      model: 'beta-5.4',
      input: 'Name a toll bridge.',
      include: ['message.output_text.logprobs'],
      top_logprobs: 3,
      store: false,
    });
    const message = response.output.find((item) => item.type === 'message')!;
    const part = message.content[0] as OpenAI.Responses.ResponseOutputText;
    expect(part.logprobs!.map((token) => token.token).join('')).toBe(part.text);
    for (const token of part.logprobs!) expect(token.top_logprobs).toHaveLength(3);
  });

  it('a stream: each text delta carries its tokens, the done event all of them', async () => {
    const stream = openai.responses.stream({
      model: 'delta-v4-flash',
      input: 'Name a toll bridge.',
      include: ['message.output_text.logprobs'],
      store: false,
    });
    let fromDeltas = '';
    let done: OpenAI.Responses.ResponseTextDoneEvent | undefined;
    for await (const event of stream) {
      if (event.type === 'response.output_text.delta')
        fromDeltas += event.logprobs.map((token) => token.token).join('');
      if (event.type === 'response.output_text.done') done = event;
    }
    expect(fromDeltas).toBe(done!.text);
    expect(done!.logprobs.map((token) => token.token).join('')).toBe(done!.text);
  });
});

describe('Anthropic sampling fields by model', () => {
  it('Claude 4.7+ models (alpha-sonnet-5, alpha-opus-4-8) get none: left out and reported, not a vendor 400', async () => {
    for (const model of ['alpha-sonnet-5', 'alpha-opus-4-8']) {
      const { data, response } = await anthropic.messages
        .create({
          model,
          max_tokens: 50,
          messages: [{ role: 'user', content: 'hi' }],
          temperature: 0.3,
          top_k: 5,
        } as Anthropic.MessageCreateParamsNonStreaming)
        .withResponse();
      expect(data.content.length).toBeGreaterThan(0);
      expect(response.headers.get('x-tollgate-dropped-params')).toBe('temperature,top_k');
    }
  });

  it('alpha-haiku-4-5 takes temperature or top_p: with both from an OpenAI client, top_p is reported', async () => {
    const { data, response } = await openai.chat.completions
      .create({ model: 'alpha-haiku-4-5', messages: [{ role: 'user', content: 'hi' }], temperature: 0.3, top_p: 0.5 })
      .withResponse();
    expect(data.choices[0]!.message.content!.length).toBeGreaterThan(0);
    expect(response.headers.get('x-tollgate-dropped-params')).toBe('top_p');
  });
});

describe('Gemini request fields', () => {
  async function generate(model: string, body: object): Promise<Response> {
    return fetch(`${harness.gateway.url}/v1beta/models/${model}:generateContent`, {
      method: 'POST',
      headers: { 'x-goog-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'What time is it?' }] }], ...body }),
    });
  }

  it('an unknown top-level field (labels) is dropped and reported, not sent to Gemini (which would refuse it)', async () => {
    const response = await generate('gamma-2.5-pro', { labels: { team: 'a' }, safetySettings: [] });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-tollgate-dropped-params')).toBe('labels');
  });

  it('functionCallingConfig VALIDATED with allowed names reaches Gemini, which takes names only with ANY or VALIDATED', async () => {
    const tools = [
      {
        functionDeclarations: [
          { name: 'get_time', description: 'Current time', parametersJsonSchema: { type: 'object' } },
          { name: 'get_date', description: 'Current date', parametersJsonSchema: { type: 'object' } },
        ],
      },
    ];
    const toolConfig = { functionCallingConfig: { mode: 'VALIDATED', allowedFunctionNames: ['get_time', 'get_date'] } };
    for (const model of ['gamma-2.5-pro', 'beta-5.4']) {
      const response = await generate(model, { tools, toolConfig });
      expect(response.status, await response.clone().text()).toBe(200);
      expect(response.headers.get('x-tollgate-dropped-params')).toBeNull();
    }
  });
});
