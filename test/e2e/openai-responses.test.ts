/**
 * The OpenAI Responses API (`POST /v1/responses`) through the official `openai` SDK (the root devDependency, in
 * process) on all eleven models: `responses.create`, `responses.stream` (whose stream ends with `data: [DONE]`),
 * a function-tool loop, stored responses (`previous_response_id`, retrieve, input items, delete, another account's
 * id), length stops as `incomplete`, and bad input refused in OpenAI's shape with nothing billed.
 */
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, stepCountIs, streamText, tool } from 'ai';
import OpenAI from 'openai';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import { ModelCatalog } from '../../src/catalog/model-catalog.js';
import { MODEL_DEFINITIONS } from '../../src/catalog/models.js';
import { ONE_PAGE_PDF_BASE64 } from '../fixtures/one-page-pdf.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const MODELS = MODEL_DEFINITIONS.map((model) => model.id);

let harness: TestGateway;
let client: OpenAI;
let key: string;

beforeAll(async () => {
  harness = await startTestGateway();
  // Over a hundred calls in a few seconds: the pro tier's 1,000 a minute, not the standard 100.
  ({ key } = await harness.createAccountWithKey(undefined, 'pro'));
  client = new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
});

afterAll(async () => {
  await harness?.close();
});

const weatherTool = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'Current weather for a city',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  },
  strict: false,
};

interface UsagePage {
  data: Array<{ request_id: string; model: string; status: string; cost_nano_usd?: string; route: string | null }>;
}

async function usageRecords(apiKey: string): Promise<UsagePage['data']> {
  const response = await fetch(`${harness.openaiBaseUrl}/usage/requests?limit=100`, {
    headers: { authorization: `Bearer ${apiKey}` },
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as UsagePage).data;
}

describe.each(MODELS)('Responses API on %s through the openai SDK', (model) => {
  it('responses.create: a completed response with output_text and usage', async () => {
    const response = await client.responses.create({
      model,
      input: 'Tell me about toll gates on old roads.',
      store: false,
    });
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

  it('an input_file PDF (file_data) reaches the model, or is refused clearly where the vendor reads no documents', async () => {
    const question = { type: 'input_text' as const, text: 'Summarise this document.' };
    const withFile = client.responses.create({
      model,
      store: false,
      input: [
        {
          role: 'user',
          content: [
            question,
            {
              type: 'input_file',
              filename: 'blank.pdf',
              file_data: `data:application/pdf;base64,${ONE_PAGE_PDF_BASE64}`,
            },
          ],
        },
      ],
    });
    if (model.startsWith('delta-')) {
      await expect(withFile).rejects.toBeInstanceOf(OpenAI.BadRequestError);
      return;
    }
    const textOnly = await client.responses.create({
      model,
      store: false,
      input: [{ role: 'user', content: [question] }],
    });
    expect((await withFile).usage!.input_tokens).toBeGreaterThan(textOnly.usage!.input_tokens);
  });
});

describe('stored responses', () => {
  it('keeps a response by default: retrieve, input items, previous_response_id, delete', async () => {
    const first = await client.responses.create({
      model: 'beta-5.4',
      input: 'Remember the word turnpike.',
      metadata: { topic: 'roads' },
    });
    expect((first as unknown as { store: boolean }).store).toBe(true);
    expect(first.metadata).toEqual({ topic: 'roads' });
    const retrieved = await client.responses.retrieve(first.id);
    expect(retrieved.id).toBe(first.id);
    expect(retrieved.output_text).toBe(first.output_text);
    expect(retrieved.usage).toEqual(first.usage);

    const fresh = await client.responses.create({ model: 'beta-5.4', input: 'Which word?', store: false });
    const second = await client.responses.create({
      model: 'beta-5.4',
      input: 'Which word?',
      previous_response_id: first.id,
    });
    expect(second.previous_response_id).toBe(first.id);
    // The model read the first turn too: more input than the same question alone.
    expect(second.usage!.input_tokens).toBeGreaterThan(fresh.usage!.input_tokens);

    const items = await client.responses.inputItems.list(second.id, { order: 'asc' });
    expect(items.data.map((item) => item.type)).toEqual(['message', 'message', 'message']);
    expect(items.data.map((item) => (item as { role?: string }).role)).toEqual(['user', 'assistant', 'user']);
    const newestFirst = await client.responses.inputItems.list(second.id, { limit: 1 });
    expect(newestFirst.data).toHaveLength(1);
    expect(newestFirst.data[0]!.id).toBe(items.data[2]!.id);
    expect(newestFirst.has_more).toBe(true);

    // A continued stream works the same way.
    const streamed = await client.responses
      .stream({ model: 'alpha-sonnet-5', input: 'And now?', previous_response_id: second.id })
      .finalResponse();
    expect(streamed.status).toBe('completed');
    expect((await client.responses.retrieve(streamed.id)).output_text).toBe(streamed.output_text);

    await client.responses.delete(first.id);
    await expect(client.responses.retrieve(first.id)).rejects.toMatchObject({ status: 404 });
    await expect(
      client.responses.create({ model: 'beta-5.4', input: 'again', previous_response_id: first.id }),
    ).rejects.toMatchObject({
      status: 404,
      error: { param: 'previous_response_id', type: 'invalid_request_error' },
    });
    await expect(client.responses.delete(first.id)).rejects.toMatchObject({ status: 404 });
  });

  it('store: false keeps nothing', async () => {
    const response = await client.responses.create({ model: 'gamma-2.5-pro', input: 'hello', store: false });
    expect((response as unknown as { store: boolean }).store).toBe(false);
    await expect(client.responses.retrieve(response.id)).rejects.toMatchObject({ status: 404 });
    await expect(
      client.responses.create({ model: 'gamma-2.5-pro', input: 'hi', previous_response_id: response.id }),
    ).rejects.toMatchObject({ status: 404 });
  });

  it("another account's response is a 404 everywhere", async () => {
    const mine = await client.responses.create({ model: 'delta-v4-flash', input: 'mine' });
    const other = await harness.createAccountWithKey();
    const stranger = new OpenAI({ apiKey: other.key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
    await expect(stranger.responses.retrieve(mine.id)).rejects.toMatchObject({ status: 404 });
    await expect(stranger.responses.inputItems.list(mine.id)).rejects.toMatchObject({ status: 404 });
    await expect(stranger.responses.delete(mine.id)).rejects.toMatchObject({ status: 404 });
    await expect(
      stranger.responses.create({ model: 'delta-v4-flash', input: 'x', previous_response_id: mine.id }),
    ).rejects.toMatchObject({ status: 404 });
    expect(await usageRecords(other.key)).toEqual([]);
    // Still there for its owner.
    expect((await client.responses.retrieve(mine.id)).id).toBe(mine.id);
  });

  it('keeps reasoning blobs, shown only when include asks for them', async () => {
    const response = await client.responses.create({
      model: 'delta-r1',
      input: 'Think first.',
      reasoning: { summary: 'auto' },
    });
    const reasoning = response.output.find((item) => item.type === 'reasoning');
    expect(reasoning).toBeDefined();
    expect(reasoning).not.toHaveProperty('encrypted_content');
    expect((reasoning as { summary: unknown[] }).summary.length).toBe(1);
    const plain = await client.responses.retrieve(response.id);
    expect(plain.output.find((item) => item.type === 'reasoning')).not.toHaveProperty('encrypted_content');
    const withBlob = await client.responses.retrieve(response.id, { include: ['reasoning.encrypted_content'] });
    expect(
      (withBlob.output.find((item) => item.type === 'reasoning') as { encrypted_content?: string }).encrypted_content,
    ).toMatch(/^tgr1\./);
  });
});

describe('length stops and failures', () => {
  it.each(['alpha-sonnet-5', 'beta-5.4', 'gamma-2.5-pro', 'delta-v4-flash'])(
    '%s: max_output_tokens ends the response incomplete (create and stream)',
    async (model) => {
      const input = 'Tell me a long story. [[sim words=400]]';
      const whole = await client.responses.create({ model, input, max_output_tokens: 20, store: false });
      expect(whole.status).toBe('incomplete');
      expect(whole.incomplete_details).toEqual({ reason: 'max_output_tokens' });
      expect(whole.max_output_tokens).toBe(20);
      const stream = client.responses.stream({ model, input, max_output_tokens: 20, store: false });
      const types: string[] = [];
      for await (const event of stream) types.push(event.type);
      expect(types.at(-1)).toBe('response.incomplete');
      const final = await stream.finalResponse();
      expect(final.status).toBe('incomplete');
      expect(final.incomplete_details).toEqual({ reason: 'max_output_tokens' });
      expect(final.output_text.length).toBeGreaterThan(0);
    },
  );

  it('a failure mid-stream is an error event, then response.failed; what was delivered is billed once', async () => {
    const before = (await usageRecords(key)).length;
    const response = await fetch(`${harness.openaiBaseUrl}/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'beta-5.4',
        input: 'Talk. [[sim disconnect-mid-stream after=2]]',
        stream: true,
        store: false,
      }),
    });
    expect(response.status).toBe(200);
    const events = (await response.text())
      .split('\n\n')
      .filter((frame) => frame.startsWith('event: '))
      .map(
        (frame) =>
          JSON.parse(frame.slice(frame.indexOf('data: ') + 6)) as {
            type: string;
            sequence_number: number;
            response?: { status: string; error: { code: string } };
          },
      );
    expect(events.at(-2)!.type).toBe('error');
    expect(events.at(-1)!.type).toBe('response.failed');
    expect(events.at(-1)!.response!.status).toBe('failed');
    // The gateway's own code on the error event, the ResponseError enum's on response.failed.
    expect((events.at(-2) as unknown as { code: string }).code).toMatch(/^upstream_/);
    expect(events.at(-1)!.response!.error.code).toBe('server_error');
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
    const records = await usageRecords(key);
    expect(records.length).toBe(before + 1);
    expect(records[0]!.status).toBe('upstream_error');
    expect(records[0]!.route).toBe('/v1/responses');
  });
});

describe("bad input: a 400 (404 for an id) in OpenAI's shape naming the field, nothing billed", () => {
  const cases: Array<[string, Record<string, unknown>, number, string]> = [
    ['an unknown item type', { input: [{ type: 'telepathy_call', id: 'x' }] }, 400, 'input[0].type'],
    [
      'a hosted-tool item',
      {
        input: [
          { role: 'user', content: 'hi' },
          { type: 'file_search_call', id: 'fs_1', status: 'completed', queries: [] },
        ],
      },
      400,
      'input[1].type',
    ],
    [
      'an output for no call',
      {
        input: [
          { role: 'user', content: 'hi' },
          { type: 'function_call_output', call_id: 'call_nope', output: 'x' },
        ],
      },
      400,
      'input[1].call_id',
    ],
    [
      'a bad content part',
      { input: [{ role: 'user', content: [{ type: 'input_text', text: 5 }] }] },
      400,
      'input[0].content[0].text',
    ],
    ['a missing input', {}, 400, 'input'],
    [
      'an unknown previous response',
      { input: 'hi', previous_response_id: 'resp_doesnotexist' },
      404,
      'previous_response_id',
    ],
    [
      'a reference to no stored item',
      { input: [{ type: 'item_reference', id: 'msg_0123456789abcdef_0' }] },
      400,
      'input[0].id',
    ],
    [
      'a forced hosted tool',
      { input: 'hi', tools: [{ type: 'web_search' }], tool_choice: { type: 'web_search' } },
      400,
      'tool_choice',
    ],
    [
      'a tool_choice naming no tool',
      { input: 'hi', tools: [weatherTool], tool_choice: { type: 'function', name: 'nope' } },
      400,
      'tool_choice.name',
    ],
    [
      'a foreign reasoning blob',
      {
        input: [
          { role: 'user', content: 'hi' },
          { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'gAAAA-openai-blob' },
        ],
      },
      400,
      'input[1].encrypted_content',
    ],
    ['background mode', { input: 'hi', background: true }, 400, 'background'],
    [
      'logprobs from a model without them',
      { model: 'alpha-haiku-4-5', input: 'hi', include: ['message.output_text.logprobs'] },
      400,
      'include[0]',
    ],
    ['too many items', { input: Array.from({ length: 10_001 }, () => ({ role: 'user', content: 'x' })) }, 400, 'input'],
    ['temperature out of range', { input: 'hi', temperature: 5 }, 400, 'temperature'],
  ];

  it.each(cases)('%s', async (_name, body, status, param) => {
    const fresh = await harness.createAccountWithKey();
    const response = await fetch(`${harness.openaiBaseUrl}/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${fresh.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'beta-5.4', ...body }),
    });
    expect(response.status).toBe(status);
    const error = (
      (await response.json()) as { error: { message: string; type: string; param: string | null; code: string } }
    ).error;
    expect(error.type).toBe('invalid_request_error');
    expect(error.param).toBe(param);
    expect(error.message.length).toBeGreaterThan(0);
    expect(await usageRecords(fresh.key)).toEqual([]);
    const account = (await (
      await fetch(`${harness.openaiBaseUrl}/account`, { headers: { authorization: `Bearer ${fresh.key}` } })
    ).json()) as {
      free_allowance: { used_today: number; reserved_today: number };
    };
    expect(account.free_allowance).toMatchObject({ used_today: 0, reserved_today: 0 });
  });

  it('drops tools no model runs and says so; the request is served', async () => {
    const response = await client.responses
      .create({
        model: 'alpha-sonnet-5',
        input: 'hi',
        tools: [weatherTool, { type: 'local_shell' }],
        prompt_cache_key: 'k1',
        store: false,
      })
      .withResponse();
    expect(response.data.status).toBe('completed');
    const dropped = response.response.headers.get('x-tollgate-dropped-params')!.split(',');
    expect(dropped).toEqual(expect.arrayContaining(['tools.local_shell', 'prompt_cache_key']));
  });
});

describe('reasoning survives a tool loop (include: reasoning.encrypted_content)', () => {
  // The beta family reasons out of sight (OpenAI's chat API returns no reasoning text or signature): nothing to replay.
  it.each(['alpha-sonnet-5', 'gamma-2.5-pro', 'delta-r1'])(
    '%s: the signed reasoning goes back to the vendor that made it',
    async (model) => {
      const input: OpenAI.Responses.ResponseInput = [
        { role: 'user', content: 'Weather in Lisbon? [[sim tool=get_weather]]' },
      ];
      const params = {
        model,
        tools: [weatherTool],
        store: false,
        include: ['reasoning.encrypted_content' as const],
        reasoning: { effort: 'high' as const, summary: 'auto' as const },
      };
      const first = await client.responses.stream({ ...params, input }).finalResponse();
      const reasoning = first.output.find((item) => item.type === 'reasoning');
      expect(reasoning, JSON.stringify(first.output)).toBeDefined();
      expect((reasoning as { encrypted_content?: string }).encrypted_content).toMatch(/^tgr1\./);
      const call = first.output.find((item) => item.type === 'function_call');
      if (call?.type !== 'function_call') throw new Error('no function call');
      // The vendors check what comes back: Anthropic the thinking signature, DeepSeek its reasoning_content.
      const second = await client.responses.create({
        ...params,
        input: [
          ...input,
          ...(first.output as OpenAI.Responses.ResponseInputItem[]),
          { type: 'function_call_output', call_id: call.call_id, output: '21 degrees' },
        ],
      });
      expect(second.status).toBe('completed');
      expect(second.output_text).toContain('21 degrees');
    },
  );
});

describe('POST /v1/responses/input_tokens', () => {
  it.each(['alpha-sonnet-5', 'beta-5.4', 'gamma-2.5-pro', 'delta-v4-flash'])(
    '%s: the count the same request is billed with, free',
    async (model) => {
      const input = 'Count these words about toll roads, please.';
      const counted = await client.responses.inputTokens.count({ model, input, instructions: 'be brief' });
      expect(counted.object).toBe('response.input_tokens');
      const before = (await usageRecords(key)).length;
      const served = await client.responses.create({ model, input, instructions: 'be brief', store: false });
      expect(counted.input_tokens).toBe(served.usage!.input_tokens);
      const records = await usageRecords(key);
      expect(records.length).toBe(before + 1);
      // One record for the served request, naming its route and model; the count made none.
      expect(records[0]).toMatchObject({ route: '/v1/responses', model, status: 'ok' });
    },
  );
});

describe('stored responses on PostgreSQL', () => {
  let postgres: TestGateway;
  let pgClient: OpenAI;

  beforeAll(async () => {
    postgres = await startTestGateway({ postgres: true });
    const { key: pgKey } = await postgres.createAccountWithKey();
    pgClient = new OpenAI({ apiKey: pgKey, baseURL: postgres.openaiBaseUrl, maxRetries: 0 });
  }, 60_000);

  afterAll(async () => {
    await postgres?.close();
  });

  it('stores, continues, lists and deletes through the same route', async () => {
    const first = await pgClient.responses
      .stream({ model: 'alpha-haiku-4-5', input: 'Remember the word turnpike.' })
      .finalResponse();
    const second = await pgClient.responses.create({
      model: 'gamma-3.5-flash',
      input: 'Which word?',
      previous_response_id: first.id,
    });
    expect((await pgClient.responses.retrieve(second.id)).output_text).toBe(second.output_text);
    const items = await pgClient.responses.inputItems.list(second.id, { order: 'asc' });
    expect(items.data.map((item) => (item as { role?: string }).role)).toEqual(['user', 'assistant', 'user']);
    await pgClient.responses.delete(second.id);
    await expect(pgClient.responses.retrieve(second.id)).rejects.toMatchObject({ status: 404 });
    expect((await pgClient.responses.retrieve(first.id)).id).toBe(first.id);
  });
});

describe('custom tools (free-text input, as Codex declares apply_patch)', () => {
  const applyPatch = { type: 'custom' as const, name: 'apply_patch', description: 'Apply a patch to the files' };

  it.each(['alpha-sonnet-5', 'beta-5.4', 'gamma-2.5-pro', 'delta-v4-flash'])(
    '%s: a custom_tool_call with its raw input, its output sent back, an answer',
    async (model) => {
      const input: OpenAI.Responses.ResponseInput = [
        { role: 'user', content: 'Fix the typo. [[sim tool=apply_patch]]' },
      ];
      const stream = client.responses.stream({ model, input, tools: [applyPatch], store: false });
      const types: string[] = [];
      for await (const event of stream) types.push(event.type);
      const first = await stream.finalResponse();
      expect(types).toContain('response.custom_tool_call_input.done');
      const call = first.output.find((item) => item.type === 'custom_tool_call');
      if (call?.type !== 'custom_tool_call') throw new Error(`no custom tool call: ${JSON.stringify(first.output)}`);
      expect(call.name).toBe('apply_patch');
      expect(typeof call.input).toBe('string');
      // The raw text, not the JSON envelope the vendor wrote it in.
      expect(call.input.startsWith('{"input"')).toBe(false);
      const whole = await client.responses.create({ model, input, tools: [applyPatch], store: false });
      expect(whole.output.find((item) => item.type === 'custom_tool_call')).toMatchObject({
        name: 'apply_patch',
        input: call.input,
      });
      const second = await client.responses.create({
        model,
        input: [
          ...input,
          ...(first.output as OpenAI.Responses.ResponseInputItem[]),
          { type: 'custom_tool_call_output', call_id: call.call_id, output: 'patch applied' },
        ],
        tools: [applyPatch],
        store: false,
      });
      expect(second.status).toBe('completed');
      expect(second.output_text).toContain('patch applied');
    },
  );

  const agents = {
    type: 'namespace' as const,
    name: 'agents',
    description: 'Sub-agents that work in parallel.',
    tools: [
      {
        type: 'function' as const,
        name: 'spawn',
        description: 'Start a sub-agent on a task.',
        parameters: { type: 'object', properties: { task: { type: 'string' } }, required: ['task'] },
      },
    ],
  } as unknown as OpenAI.Responses.Tool;

  it.each(['alpha-sonnet-5', 'beta-5.4', 'gamma-2.5-pro', 'delta-v4-flash'])(
    '%s: a namespaced tool is called by namespace and name, and its output goes back',
    async (model) => {
      const input: OpenAI.Responses.ResponseInput = [
        { role: 'user', content: 'Delegate the search. [[sim tool=agents__spawn]]' },
      ];
      const first = await client.responses.create({ model, input, tools: [agents], store: false });
      const call = first.output.find((item) => item.type === 'function_call');
      if (call?.type !== 'function_call') throw new Error(`no function call: ${JSON.stringify(first.output)}`);
      expect(call).toMatchObject({ name: 'spawn', namespace: 'agents' });
      expect(JSON.parse(call.arguments)).toHaveProperty('task');
      const streamed = client.responses.stream({ model, input, tools: [agents], store: false });
      const added: unknown[] = [];
      for await (const event of streamed) if (event.type === 'response.output_item.added') added.push(event.item);
      expect(added).toContainEqual(
        expect.objectContaining({ type: 'function_call', name: 'spawn', namespace: 'agents' }),
      );
      const second = await client.responses.create({
        model,
        input: [
          ...input,
          ...(first.output as OpenAI.Responses.ResponseInputItem[]),
          { type: 'function_call_output', call_id: call.call_id, output: 'sub-agent started' },
        ],
        tools: [agents],
        store: false,
      });
      expect(second.status).toBe('completed');
      expect(second.output_text).toContain('sub-agent started');
    },
  );
});

describe('billing on /v1/responses (no free allowance)', () => {
  let paid: TestGateway;
  const catalog = new ModelCatalog();

  beforeAll(async () => {
    paid = await startTestGateway({ env: { FREE_TOKENS_PER_DAY: '0' } });
  }, 60_000);

  afterAll(async () => {
    await paid?.close();
  });

  function expected(model: string, usage: OpenAI.Responses.ResponseUsage): bigint {
    const prices = catalog.resolve(model).prices;
    const cached = usage.input_tokens_details.cached_tokens;
    const written = (usage.input_tokens_details as { cache_write_tokens?: number }).cache_write_tokens ?? 0;
    return (
      BigInt(usage.input_tokens - cached - written) * prices.input +
      BigInt(cached) * prices.cacheRead +
      BigInt(written) * prices.cacheWrite +
      BigInt(usage.output_tokens) * prices.output
    );
  }

  it('charges every model exactly tokens × price, stream and non-stream; one usage record each; the ledger agrees', async () => {
    const { key: paidKey, accountId } = await paid.createAccountWithKey(undefined, 'enterprise');
    await paid.gateway.storage.billing.credit({
      accountId,
      kind: 'topup',
      amountNano: parseUsd('50'),
      idempotencyKey: `t-${accountId}`,
      note: null,
      at: Date.now(),
    });
    const paying = new OpenAI({ apiKey: paidKey, baseURL: paid.openaiBaseUrl, maxRetries: 0 });
    let total = 0n;
    for (const model of MODELS) {
      const input = `Price check for ${model} [[sim cache-read=8]]`;
      const { data: whole, response } = await paying.responses
        .create({ model, input, max_output_tokens: 60, store: false })
        .withResponse();
      const cost = expected(model, whole.usage!);
      expect(cost).toBeGreaterThan(0n);
      expect(BigInt((whole.usage as unknown as { cost_nano_usd: string }).cost_nano_usd)).toBe(cost);
      expect(parseUsd(response.headers.get('x-tollgate-cost-usd')!)).toBe(cost);
      const streamed = await paying.responses
        .stream({ model, input, max_output_tokens: 60, store: false })
        .finalResponse();
      expect(BigInt((streamed.usage as unknown as { cost_nano_usd: string }).cost_nano_usd)).toBe(
        expected(model, streamed.usage!),
      );
      total += cost + expected(model, streamed.usage!);
    }
    expect((await paid.gateway.storage.billing.balance(accountId))!.balanceNano).toBe(parseUsd('50') - total);
    const rows = await paid.gateway.storage.usage.listByAccount(accountId, 100);
    expect(rows).toHaveLength(MODELS.length * 2);
    expect(rows.every((row) => row.route === '/v1/responses')).toBe(true);
    expect(rows.reduce((sum, row) => sum + row.costNano, 0n)).toBe(total);
    expect(await paid.gateway.storage.billing.verifyLedger()).toEqual([]);
  });

  it("an account that cannot pay is refused before any vendor call, in OpenAI's shape", async () => {
    const { key: brokeKey, accountId: brokeId } = await paid.createAccountWithKey();
    const broke = new OpenAI({ apiKey: brokeKey, baseURL: paid.openaiBaseUrl, maxRetries: 0 });
    await expect(broke.responses.create({ model: 'beta-5.4', input: 'hi' })).rejects.toMatchObject({
      status: 403,
      error: { type: 'insufficient_balance' },
    });
    expect(await paid.gateway.storage.usage.listByAccount(brokeId, 10)).toEqual([]);
  });
});

describe('the Vercel AI SDK (root ai 6) default provider, which calls /v1/responses', () => {
  // `provider(id)` is the Responses model (`.chat(id)` would be chat completions).
  const provider = () => createOpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl });

  it.each(['alpha-sonnet-5', 'beta-5.4', 'o3', 'gamma-2.5-pro', 'delta-r1'])(
    '%s: generateText, streamText and a tool call answered in a second step',
    async (model) => {
      const generated = await generateText({
        model: provider()(model),
        prompt: 'Say something about bridges.',
        maxRetries: 0,
      });
      expect(generated.text.length).toBeGreaterThan(0);
      expect(generated.finishReason).toBe('stop');
      expect(generated.usage.inputTokens).toBeGreaterThan(0);

      const streamed = streamText({ model: provider()(model), prompt: 'Say something about rivers.', maxRetries: 0 });
      expect((await streamed.text).length).toBeGreaterThan(0);
      expect(await streamed.finishReason).toBe('stop');
      expect((await streamed.usage).outputTokens).toBeGreaterThan(0);

      let ran = 0;
      const looped = await generateText({
        model: provider()(model),
        prompt: 'Weather in Porto? [[sim tool=get_weather]]',
        tools: {
          get_weather: tool({
            description: 'Current weather for a city',
            inputSchema: z.object({ city: z.string() }),
            execute: async ({ city }) => {
              ran += 1;
              return { city, celsius: 19 };
            },
          }),
        },
        stopWhen: stepCountIs(3),
        maxRetries: 0,
      });
      expect(ran).toBe(1);
      expect(looped.steps.map((step) => step.finishReason)).toEqual(['tool-calls', 'stop']);
      expect(looped.text).toContain('celsius');
      // All of it through the Responses route: this suite never calls chat completions.
      await harness.flushLogs();
      const urls = harness.logs
        .flatMap((chunk) => chunk.split('\n'))
        .filter((line) => line.includes('"msg":"request"'))
        .map((line) => (JSON.parse(line) as { url: string }).url);
      expect(urls).toContain('/v1/responses');
      expect(urls).not.toContain('/v1/chat/completions');
    },
  );
});
