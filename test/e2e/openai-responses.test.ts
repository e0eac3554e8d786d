/**
 * The OpenAI Responses API (`POST /v1/responses`) through the official `openai` SDK (the root devDependency, in
 * process) on all eleven models: `responses.create`, `responses.stream` (whose stream ends with `data: [DONE]`),
 * a function-tool loop, stored responses (`previous_response_id`, retrieve, input items, delete, another account's
 * id), length stops as `incomplete`, and bad input refused in OpenAI's shape with nothing billed.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MODEL_DEFINITIONS } from '../../src/catalog/models.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const MODELS = MODEL_DEFINITIONS.map((model) => model.id);

let harness: TestGateway;
let client: OpenAI;
let key: string;

beforeAll(async () => {
  harness = await startTestGateway();
  ({ key } = await harness.createAccountWithKey());
  client = new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
});

afterAll(async () => {
  await harness?.close();
});

const weatherTool = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'Current weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
  strict: false,
};

interface UsagePage {
  data: Array<{ request_id: string; model: string; status: string; cost_nano_usd?: string }>;
}

async function usageRecords(apiKey: string): Promise<UsagePage['data']> {
  const response = await fetch(`${harness.openaiBaseUrl}/usage/requests?limit=100`, { headers: { authorization: `Bearer ${apiKey}` } });
  expect(response.status).toBe(200);
  return ((await response.json()) as UsagePage).data;
}

describe.each(MODELS)('Responses API on %s through the openai SDK', (model) => {
  it('responses.create: a completed response with output_text and usage', async () => {
    const response = await client.responses.create({ model, input: 'Tell me about toll gates on old roads.', store: false });
    expect(response.object).toBe('response');
    expect(response.id).toMatch(/^resp_/);
    expect(response.model).toBe(model);
    expect(response.status).toBe('completed');
    expect(response.output_text.length).toBeGreaterThan(0);
    const message = response.output.find((item) => item.type === 'message');
    expect(message).toMatchObject({ role: 'assistant', status: 'completed' });
    const usage = response.usage!;
    expect(usage.input_tokens).toBeGreaterThan(0);
    expect(usage.output_tokens).toBeGreaterThan(0);
    expect(usage.total_tokens).toBe(usage.input_tokens + usage.output_tokens);
    expect(usage.input_tokens_details.cached_tokens).toBeGreaterThanOrEqual(0);
    expect(usage.output_tokens_details.reasoning_tokens).toBeGreaterThanOrEqual(0);
    expect((usage as unknown as { cost_nano_usd: string }).cost_nano_usd).toMatch(/^\d+$/);
  });

  it('responses.stream: the event sequence the SDK accumulates, text equal to its deltas', async () => {
    const stream = client.responses.stream({ model, input: 'Describe a bridge in a few words.', store: false });
    const types: string[] = [];
    const sequence: number[] = [];
    let deltas = '';
    for await (const event of stream) {
      types.push(event.type);
      sequence.push(event.sequence_number);
      if (event.type === 'response.output_text.delta') deltas += event.delta;
    }
    const final = await stream.finalResponse();
    expect(types[0]).toBe('response.created');
    expect(types[1]).toBe('response.in_progress');
    expect(types.at(-1)).toBe('response.completed');
    expect(types).toContain('response.output_item.added');
    expect(types).toContain('response.content_part.added');
    expect(types).toContain('response.output_text.done');
    expect(types).toContain('response.output_item.done');
    expect(sequence).toEqual(sequence.map((_, index) => index));
    expect(final.status).toBe('completed');
    expect(final.output_text).toBe(deltas);
    expect(final.usage!.output_tokens).toBeGreaterThan(0);
  });

  it('a function-tool loop: the call, its output sent back, a final answer', async () => {
    const first = await client.responses.create({
      model,
      input: 'Weather in Lisbon? [[sim tool=get_weather]]',
      tools: [weatherTool],
      store: false,
      include: ['reasoning.encrypted_content'],
    });
    expect(first.status).toBe('completed');
    const call = first.output.find((item) => item.type === 'function_call');
    expect(call).toMatchObject({ type: 'function_call', name: 'get_weather' });
    if (call?.type !== 'function_call') throw new Error('no function call');
    expect(JSON.parse(call.arguments)).toHaveProperty('city');
    const second = await client.responses.create({
      model,
      input: [
        { role: 'user', content: 'Weather in Lisbon? [[sim tool=get_weather]]' },
        ...(first.output as OpenAI.Responses.ResponseInputItem[]),
        { type: 'function_call_output', call_id: call.call_id, output: '{"temperature": 21}' },
      ],
      tools: [weatherTool],
      store: false,
    });
    expect(second.status).toBe('completed');
    expect(second.output.some((item) => item.type === 'function_call')).toBe(false);
    expect(second.output_text.length).toBeGreaterThan(0);
  });
});
