/**
 * Replies checked against the newest SDKs' types, over real HTTP: the Responses API's whole replies and stream
 * events carry the fields `openai` 7's types require (`input_tokens_details.cache_write_tokens`, `logprobs` on text
 * parts and events), `response.failed` a code from the SDK's `ResponseError` enum (read from its type definitions),
 * and a Gemini stream broken mid-way pairs each code with its google.rpc status. Then, run by Node 24 from the agent
 * test package (test/agents/clients/structured-output.mjs): structured output on delta, which the gateway serves as
 * JSON mode plus the schema as an instruction, with the openai SDK, the Vercel AI SDK's `generateObject`, LangChain's
 * `withStructuredOutput` and the OpenAI Agents SDK's `outputType`; and a broken Responses stream read by the openai
 * SDK.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENTS_PACKAGE_DIR, NODE_24 } from '../helpers/agents-package.js';
import { sseData } from '../helpers/sse-data.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

let harness: TestGateway;
let key: string;

beforeAll(async () => {
  harness = await startTestGateway();
  ({ key } = await harness.createAccountWithKey(undefined, 'pro'));
}, 60_000);

afterAll(async () => {
  await harness?.close();
});

/** The string literals of `ResponseError['code']` in the installed openai SDK's type definitions. */
function responseErrorCodes(): string[] {
  const types = readFileSync(
    join(AGENTS_PACKAGE_DIR, 'node_modules/openai/resources/responses/responses.d.ts'),
    'utf8',
  );
  const declaration = /export interface ResponseError \{[^}]*?code: ([^;]+);/s.exec(types);
  expect(declaration, 'ResponseError.code in the openai SDK types').not.toBeNull();
  return [...declaration![1]!.matchAll(/'([a-z_]+)'/g)].map((match) => match[1]!);
}

type Event = { type: string; [field: string]: any };

async function responses(body: Record<string, unknown>): Promise<{ status: number; text: string }> {
  const response = await fetch(`${harness.openaiBaseUrl}/responses`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ store: false, ...body }),
  });
  return { status: response.status, text: await response.text() };
}

function sseEvents(text: string): Event[] {
  return sseData(text) as Event[];
}

/** `ResponseOutputText` as the SDK types it: annotations and logprobs arrays beside the text. */
function expectOutputTextPart(part: Record<string, unknown>): void {
  expect(part).toEqual({ type: 'output_text', text: expect.any(String), annotations: [], logprobs: [] });
}

/** `ResponseUsage` as the SDK types it: every detail field present, numbers. */
function expectUsage(usage: Record<string, any>): void {
  expect(usage).toMatchObject({
    input_tokens: expect.any(Number),
    input_tokens_details: { cached_tokens: expect.any(Number), cache_write_tokens: expect.any(Number) },
    output_tokens: expect.any(Number),
    output_tokens_details: { reasoning_tokens: expect.any(Number) },
    total_tokens: expect.any(Number),
  });
}

describe.each(['beta-5.4', 'alpha-haiku-4-5', 'gamma-3.5-flash', 'delta-v4-flash'])(
  'Responses replies from %s against the openai SDK types',
  (model) => {
    it('a whole reply: output_text parts with logprobs, usage with cache_write_tokens', async () => {
      const reply = await responses({ model, input: 'Tell me about bridges.' });
      expect(reply.status, reply.text).toBe(200);
      const body = JSON.parse(reply.text) as Record<string, any>;
      const message = (body.output as Event[]).find((item) => item.type === 'message')!;
      for (const part of message.content) expectOutputTextPart(part);
      expectUsage(body.usage);
    });

    it('a stream: every text event and content part carries logprobs; the final usage has cache_write_tokens', async () => {
      const reply = await responses({ model, input: 'Tell me about bridges.', stream: true });
      const events = sseEvents(reply.text);
      const ofType = (type: string) => events.filter((event) => event.type === type);
      for (const type of ['response.content_part.added', 'response.content_part.done']) {
        expect(ofType(type).length).toBeGreaterThan(0);
        for (const event of ofType(type)) expectOutputTextPart(event.part);
      }
      for (const type of ['response.output_text.delta', 'response.output_text.done']) {
        expect(ofType(type).length).toBeGreaterThan(0);
        for (const event of ofType(type)) expect(event.logprobs).toEqual([]);
      }
      const completed = ofType('response.completed')[0]!.response;
      for (const item of completed.output as Event[])
        if (item.type === 'message') for (const part of item.content) expectOutputTextPart(part);
      expectUsage(completed.usage);
    });

    it('a vendor failing mid-stream: response.failed carries a code of the ResponseError enum', async () => {
      const codes = responseErrorCodes();
      expect(codes).toContain('server_error');
      for (const [fault, expected] of [
        ['fault=error status=500 after=2', 'server_error'],
        ['malformed-chunk after=2', 'server_error'],
      ] as const) {
        const reply = await responses({ model, input: `Tell me about tolls. [[sim ${fault}]]`, stream: true });
        const events = sseEvents(reply.text);
        const failed = events.find((event) => event.type === 'response.failed');
        expect(failed, reply.text).toBeDefined();
        expect(codes).toContain(failed!.response.error.code);
        expect(failed!.response.error).toEqual({ code: expected, message: expect.any(String) });
        // The `error` event before it keeps the gateway's own code (its type is a free string).
        expect(events.at(-2)).toMatchObject({ type: 'error', code: expect.stringMatching(/^upstream_/) });
      }
    });
  },
);

// A stream the vendor cuts with a malformed chunk is the catalog's 502: Google pairs UNAVAILABLE with 503.
describe('a Gemini stream failing mid-way', () => {
  it.each([
    ['malformed-chunk after=2', 503, 'UNAVAILABLE'],
    ['fault=error status=500 after=2', 500, 'INTERNAL'],
  ] as const)('%s: the error chunk pairs %i with %s', async (fault, code, status) => {
    const body = { contents: [{ role: 'user', parts: [{ text: `Tell me about tolls. [[sim ${fault}]]` }] }] };
    for (const model of ['gamma-3.5-flash', 'beta-5.4']) {
      const response = await fetch(`${harness.gateway.url}/v1beta/models/${model}:streamGenerateContent?alt=sse`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-goog-api-key': key },
        body: JSON.stringify(body),
      });
      expect(response.status).toBe(200);
      const last = sseEvents(await response.text()).at(-1)!;
      expect(last.error).toMatchObject({ code, status });
    }
  });
});

interface Outcome<T> {
  ok: boolean;
  value?: T;
  message?: string;
}

describe('structured output on delta-v4-flash with the newest clients (Node 24)', () => {
  let report: Record<string, Outcome<any>>;

  beforeAll(async () => {
    const env = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      OPENAI_AGENTS_DISABLE_TRACING: '1',
      OPENAI_BASE_URL: harness.openaiBaseUrl,
      OPENAI_API_KEY: key,
      MODEL: 'delta-v4-flash',
      STREAM_MODEL: 'beta-5.4',
    };
    const { stdout } = await promisify(execFile)(NODE_24, [join(AGENTS_PACKAGE_DIR, 'clients/structured-output.mjs')], {
      env,
      cwd: AGENTS_PACKAGE_DIR,
      timeout: 240_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    report = JSON.parse(stdout) as Record<string, Outcome<any>>;
  }, 300_000);

  it.each([
    'openaiResponseFormat',
    'aiGenerateObjectChat',
    'aiGenerateObjectResponses',
    'langchainStructured',
    'agentsOutputType',
  ])('%s: an object the client validated against its schema', (name) => {
    const outcome = report[name]!;
    expect(outcome.ok, outcome.message).toBe(true);
    expect(Object.keys(outcome.value).sort()).toEqual(['city', 'landmarks', 'population']);
  });

  it('the openai SDK reading a Responses stream that fails mid-way: the error, after the delivered text', () => {
    const outcome = report['failedStream']!;
    expect(outcome.ok, outcome.message).toBe(true);
    expect(outcome.value.types).toContain('response.output_text.delta');
    expect(outcome.value).toMatchObject({ errorName: 'APIError', code: 'upstream_server_error' });
  });
});
