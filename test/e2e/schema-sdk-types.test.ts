/**
 * Every reply shape of every client protocol, from every family, checked at run time against the newest SDKs' own
 * type declarations (test/helpers/sdk-reply-types.ts): Chat Completions' `ChatCompletion` and `ChatCompletionChunk`
 * (openai), Messages' `Message` and `RawMessageStreamEvent` (@anthropic-ai/sdk), Responses' `Response` and
 * `ResponseStreamEvent` (openai), and Gemini's `GenerateContentResponse` (@google/genai), whole and streamed. Each
 * protocol is asked for a plain answer, a tool call and reasoning, so text, tool and thinking parts all appear.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sdkTypeMismatches, type SdkTypeName, type TypedReply } from '../helpers/sdk-reply-types.js';
import { sseData } from '../helpers/sse-data.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const MODELS = ['alpha-sonnet-5', 'beta-5.4', 'gamma-2.5-pro', 'delta-v4-flash'] as const;
type Variant = 'text' | 'tool' | 'reasoning';
const VARIANTS: Variant[] = ['text', 'tool', 'reasoning'];

const TOOL_PROMPT = 'What is the toll at the north gate? [[sim tool=get_toll]]';
const TOOL_PARAMETERS = {
  type: 'object',
  properties: { gate: { type: 'string', description: 'The gate' } },
  required: ['gate'],
};

interface ProtocolCall {
  path: (model: string, stream: boolean) => string;
  body: (model: string, variant: Variant, stream: boolean) => Record<string, unknown>;
  whole: SdkTypeName;
  event: SdkTypeName;
}

function prompt(variant: Variant): string {
  return variant === 'tool' ? TOOL_PROMPT : 'Tell me about bridges.';
}

/** Each protocol's request for a variant, and the SDK types of its whole reply and of its stream's events. */
const PROTOCOLS: Record<string, ProtocolCall> = {
  chat: {
    path: () => '/v1/chat/completions',
    body: (model, variant, stream) => ({
      model,
      messages: [{ role: 'user', content: prompt(variant) }],
      ...(stream ? { stream, stream_options: { include_usage: true } } : {}),
      ...(variant === 'tool'
        ? { tools: [{ type: 'function', function: { name: 'get_toll', parameters: TOOL_PARAMETERS } }] }
        : {}),
      ...(variant === 'reasoning' ? { reasoning_effort: 'low' } : {}),
    }),
    whole: 'ChatCompletion',
    event: 'ChatCompletionChunk',
  },
  messages: {
    path: () => '/v1/messages',
    body: (model, variant, stream) => ({
      model,
      max_tokens: 2048,
      messages: [{ role: 'user', content: prompt(variant) }],
      stream,
      ...(variant === 'tool' ? { tools: [{ name: 'get_toll', input_schema: TOOL_PARAMETERS }] } : {}),
      ...(variant === 'reasoning' ? { thinking: { type: 'enabled', budget_tokens: 1024 } } : {}),
    }),
    whole: 'Message',
    event: 'RawMessageStreamEvent',
  },
  responses: {
    path: () => '/v1/responses',
    body: (model, variant, stream) => ({
      model,
      input: prompt(variant),
      store: false,
      stream,
      ...(variant === 'tool'
        ? { tools: [{ type: 'function', name: 'get_toll', parameters: TOOL_PARAMETERS, strict: false }] }
        : {}),
      ...(variant === 'reasoning' ? { reasoning: { effort: 'low', summary: 'auto' } } : {}),
    }),
    whole: 'Response',
    event: 'ResponseStreamEvent',
  },
  gemini: {
    path: (model, stream) => `/v1beta/models/${model}:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`,
    body: (_model, variant) => ({
      contents: [{ role: 'user', parts: [{ text: prompt(variant) }] }],
      ...(variant === 'tool'
        ? { tools: [{ functionDeclarations: [{ name: 'get_toll', parameters: TOOL_PARAMETERS }] }] }
        : {}),
      ...(variant === 'reasoning'
        ? { generationConfig: { thinkingConfig: { includeThoughts: true, thinkingBudget: 1024 } } }
        : {}),
    }),
    whole: 'GenerateContentResponse',
    event: 'GenerateContentResponse',
  },
};

let harness: TestGateway;
let key: string;

beforeAll(async () => {
  harness = await startTestGateway();
  ({ key } = await harness.createAccountWithKey(undefined, 'pro'));
}, 60_000);

afterAll(async () => {
  await harness?.close();
});

/** One call; its whole reply or each of its stream's events, labelled, with the SDK type each must conform to. */
async function replies(protocol: string, model: string, variant: Variant, stream: boolean): Promise<TypedReply[]> {
  const call = PROTOCOLS[protocol]!;
  const response = await fetch(`${harness.gateway.url}${call.path(model, stream)}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'x-goog-api-key': key,
      'anthropic-version': '2023-06-01',
      'content-type': 'application/json',
    },
    body: JSON.stringify(call.body(model, variant, stream)),
  });
  const text = await response.text();
  const label = `${protocol} ${model} ${variant}${stream ? ' stream' : ''}`;
  expect(response.status, `${label}: ${text}`).toBe(200);
  if (!stream) return [{ label, type: call.whole, value: JSON.parse(text) }];
  const events = sseData(text);
  expect(events.length, label).toBeGreaterThan(0);
  return events.map((value, index) => ({ label: `${label} event ${index}`, type: call.event, value }));
}

it('every reply of every protocol and family conforms to the newest SDK types', async () => {
  const calls = Object.keys(PROTOCOLS).flatMap((protocol) =>
    MODELS.flatMap((model) =>
      VARIANTS.flatMap((variant) => [false, true].map((stream) => replies(protocol, model, variant, stream))),
    ),
  );
  const all = (await Promise.all(calls)).flat();
  // The variants produced what they ask for, so their parts were checked too.
  const json = JSON.stringify(all.map((reply) => reply.value));
  for (const part of ['"tool_calls"', '"tool_use"', '"function_call"', '"functionCall"', '"thinking"', '"reasoning"'])
    expect(json, part).toContain(part);
  expect(sdkTypeMismatches(all)).toEqual([]);
}, 120_000);

it('reports a reply that breaks its SDK type, naming it', () => {
  const broken: TypedReply[] = [
    {
      label: 'a chat completion without refusal',
      type: 'ChatCompletion',
      value: {
        id: 'x',
        object: 'chat.completion',
        created: 1,
        model: 'm',
        choices: [{ index: 0, finish_reason: 'stop', logprobs: null, message: { role: 'assistant', content: 'hi' } }],
      },
    },
    {
      label: 'a Gemini finish reason',
      type: 'GenerateContentResponse',
      value: { candidates: [{ finishReason: 'DONE' }] },
    },
  ];
  const mismatches = sdkTypeMismatches(broken);
  expect(mismatches).toEqual([
    expect.stringMatching(/^a chat completion without refusal: .*'refusal' is missing/s),
    expect.stringMatching(/^a Gemini finish reason: .*"DONE"/s),
  ]);
}, 60_000);
