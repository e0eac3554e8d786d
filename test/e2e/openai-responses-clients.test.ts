/**
 * The newest `openai` SDK (7.x) and the Vercel AI SDK (ai 7, the default `openai(id)` provider, which calls
 * `/v1/responses`), run by Node 24 from the agent test package (test/agents/clients/openai-responses-clients.mjs),
 * against the gateway on all eleven models: `responses.create`, `responses.stream` (the stream ends with
 * `data: [DONE]` after `response.completed`, and the SDK still parses it), a function-tool loop with reasoning
 * replayed through `encrypted_content`, a streamed custom tool call, `previous_response_id` with `inputItems.list`;
 * the AI SDK's `generateText`, `streamText` and a tool call executed and answered in a second step; and the OpenAI
 * Agents SDK's `run()` with a function tool.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MODEL_DEFINITIONS } from '../../src/catalog/models.js';
import { AGENTS_PACKAGE_DIR, NODE_24 } from '../helpers/agents-package.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const MODELS = MODEL_DEFINITIONS.map((model) => model.id);

interface Outcome<T> {
  ok: boolean;
  value?: T;
  status?: number | null;
  name?: string | null;
  message?: string;
}
interface Usage {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
}
interface AiUsage {
  inputTokens: number;
  outputTokens: number;
}
interface ModelReport {
  create: Outcome<{ id: string; status: string; text: string; usage: Usage }>;
  stream: Outcome<{ types: string[]; deltas: string; text: string; status: string; usage: Usage }>;
  toolLoop: Outcome<{ calls: string[]; finalText: string; finalItems: string[] }>;
  customTool: Outcome<{ name: string; inputType: string; finalText: string }>;
  previousResponse: Outcome<{ text: string; inputItemTypes: string[]; previous: boolean }>;
  aiGenerateText: Outcome<{ text: string; finishReason: string; usage: AiUsage }>;
  aiStreamText: Outcome<{ text: string; finishReason: string; usage: AiUsage }>;
  aiToolCall: Outcome<{ ran: number; steps: string[]; text: string; toolNames: string[] }>;
  agentsRun: Outcome<{ finalOutput: string; items: string[] }>;
}

let harness: TestGateway;
let report: Record<string, ModelReport>;
let statuses: number[];
/** The raw SSE body of one streamed response, read without any SDK. */
let rawStream: string;

beforeAll(async () => {
  harness = await startTestGateway();
  // Over a hundred calls in a few seconds: the pro tier's 1,000 a minute, not the standard 100.
  const { key } = await harness.createAccountWithKey(undefined, 'pro');
  const script = join(AGENTS_PACKAGE_DIR, 'clients/openai-responses-clients.mjs');
  // The Agents SDK would export traces to OpenAI: off, as a user pointing it elsewhere turns it off.
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    OPENAI_AGENTS_DISABLE_TRACING: '1',
    OPENAI_BASE_URL: harness.openaiBaseUrl,
    OPENAI_API_KEY: key,
    MODELS: MODELS.join(','),
  };
  const { stdout } = await promisify(execFile)(NODE_24, [script], {
    env,
    cwd: AGENTS_PACKAGE_DIR,
    timeout: 480_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  report = JSON.parse(stdout) as Record<string, ModelReport>;
  await harness.flushLogs();
  statuses = harness.logs
    .flatMap((chunk) => chunk.split('\n'))
    .filter((line) => line.includes('"msg":"request"') && line.includes('"url":"/v1/responses'))
    .map((line) => (JSON.parse(line) as { status: number }).status);
  const response = await fetch(`${harness.openaiBaseUrl}/responses`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'beta-5.4', input: 'hi', stream: true, store: false }),
  });
  rawStream = await response.text();
}, 600_000);

afterAll(async () => {
  await harness?.close();
});

describe('the Responses stream on the wire', () => {
  it('ends with data: [DONE] right after response.completed', () => {
    const frames = rawStream.split('\n\n').filter((frame) => frame.trim() !== '' && !frame.startsWith(':'));
    expect(frames.at(-1)).toBe('data: [DONE]');
    expect(frames.at(-2)).toMatch(/^event: response\.completed\ndata: \{"type":"response\.completed"/);
  });

  it('every call of the clients succeeded', () => {
    expect(statuses.length).toBeGreaterThan(MODELS.length * 10);
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
  });
});

describe.each(MODELS)('openai 7 and the Vercel AI SDK on %s (Node 24)', (model) => {
  it('responses.create: completed, with text and usage', () => {
    const outcome = report[model]!.create;
    expect(outcome.ok, outcome.message).toBe(true);
    expect(outcome.value!.status).toBe('completed');
    expect(outcome.value!.text.length).toBeGreaterThan(0);
    expect(outcome.value!.usage.total_tokens).toBe(
      outcome.value!.usage.input_tokens + outcome.value!.usage.output_tokens,
    );
  });

  it('responses.stream: parsed to the end ([DONE] included), final text equal to the deltas', () => {
    const outcome = report[model]!.stream;
    expect(outcome.ok, outcome.message).toBe(true);
    const value = outcome.value!;
    expect(value.types[0]).toBe('response.created');
    expect(value.types.at(-1)).toBe('response.completed');
    expect(value.text).toBe(value.deltas);
    expect(value.status).toBe('completed');
    expect(value.usage.output_tokens).toBeGreaterThan(0);
  });

  it('a function-tool loop: the call, its output, a final answer that read it', () => {
    const outcome = report[model]!.toolLoop;
    expect(outcome.ok, outcome.message).toBe(true);
    expect(outcome.value!.calls).toEqual(['get_weather']);
    expect(outcome.value!.finalItems).not.toContain('function_call');
    expect(outcome.value!.finalText).toContain('celsius');
  });

  it('a custom tool streamed as a custom_tool_call, its output sent back', () => {
    const outcome = report[model]!.customTool;
    expect(outcome.ok, outcome.message).toBe(true);
    expect(outcome.value).toMatchObject({ name: 'apply_patch', inputType: 'string' });
    expect(outcome.value!.finalText).toContain('patch applied');
  });

  it('previous_response_id continues a stored conversation; inputItems.list shows it', () => {
    const outcome = report[model]!.previousResponse;
    expect(outcome.ok, outcome.message).toBe(true);
    expect(outcome.value!.previous).toBe(true);
    expect(outcome.value!.text.length).toBeGreaterThan(0);
    // The first turn's input and output, then the second turn's input.
    expect(outcome.value!.inputItemTypes[0]).toBe('message');
    expect(outcome.value!.inputItemTypes.length).toBeGreaterThanOrEqual(3);
  });

  it('Vercel AI SDK openai(id): generateText and streamText', () => {
    for (const outcome of [report[model]!.aiGenerateText, report[model]!.aiStreamText]) {
      expect(outcome.ok, outcome.message).toBe(true);
      expect(outcome.value!.text.length).toBeGreaterThan(0);
      expect(outcome.value!.finishReason).toBe('stop');
      expect(outcome.value!.usage.inputTokens).toBeGreaterThan(0);
      expect(outcome.value!.usage.outputTokens).toBeGreaterThan(0);
    }
  });

  it('Vercel AI SDK openai(id): a tool call executed, then answered', () => {
    const outcome = report[model]!.aiToolCall;
    expect(outcome.ok, outcome.message).toBe(true);
    expect(outcome.value!.ran).toBe(1);
    expect(outcome.value!.toolNames).toEqual(['get_weather']);
    expect(outcome.value!.steps).toEqual(['tool-calls', 'stop']);
    expect(outcome.value!.text.length).toBeGreaterThan(0);
  });

  it('OpenAI Agents SDK: run() with a function tool, to a final answer that read its output', () => {
    const outcome = report[model]!.agentsRun;
    expect(outcome.ok, outcome.message).toBe(true);
    expect(outcome.value!.items).toEqual(
      expect.arrayContaining(['tool_call_item', 'tool_call_output_item', 'message_output_item']),
    );
    expect(outcome.value!.finalOutput).toContain('Lisbon: 21 celsius');
  });
});
