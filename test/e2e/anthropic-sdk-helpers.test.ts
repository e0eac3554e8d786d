/**
 * The newest @anthropic-ai/sdk (1.14) and @langchain/anthropic, run by Node 24 from the agent test package
 * (test/agents/clients/anthropic-sdk-helpers.mjs), against the gateway on one model of each family: the SDK's
 * `messages.stream().finalMessage()`, `beta.messages.toolRunner` (threaded by default: the gateway's 400, and the
 * SDK's recovery from it), and LangChain's ChatAnthropic streaming usage.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENTS_PACKAGE_DIR, NODE_24 } from '../helpers/agents-package.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const MODELS = ['alpha-sonnet-5', 'beta-5.4', 'gamma-2.5-pro', 'delta-v4-flash'] as const;

interface Outcome<T> {
  ok: boolean;
  value?: T;
  status?: number | null;
  errorCode?: string | null;
  name?: string | null;
  message?: string;
}
interface Usage {
  input_tokens: number;
  output_tokens: number;
}
interface ModelReport {
  finalMessage: Outcome<{
    stopReason: string;
    text: string;
    wholeText: string;
    startInput: number;
    usage: Usage;
    wholeUsage: Usage;
  }>;
  toolRunnerThreaded: Outcome<{ stops: string[]; finalText: string }>;
  toolRunnerNoThread: Outcome<{ stops: string[]; finalText: string }>;
  langchain: Outcome<{
    streamedUsage: { input_tokens: number; output_tokens: number; total_tokens: number };
    invokedUsage: { input_tokens: number; output_tokens: number };
    text: string;
  }>;
}

let harness: TestGateway;
let report: Record<string, ModelReport>;
/** The gateway's answers to the script's `/v1/messages` calls, in order. */
let messageStatuses: number[];

beforeAll(async () => {
  harness = await startTestGateway();
  const { key } = await harness.createAccountWithKey();
  const script = join(AGENTS_PACKAGE_DIR, 'clients/anthropic-sdk-helpers.mjs');
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    GATEWAY_URL: harness.gateway.url,
    API_KEY: key,
    MODELS: MODELS.join(','),
  };
  const { stdout } = await promisify(execFile)(NODE_24, [script], {
    env,
    cwd: AGENTS_PACKAGE_DIR,
    timeout: 240_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  report = JSON.parse(stdout) as Record<string, ModelReport>;
  await harness.flushLogs();
  messageStatuses = harness.logs
    .flatMap((chunk) => chunk.split('\n'))
    .filter((line) => line.includes('"msg":"request"') && line.includes('"url":"/v1/messages"'))
    .map((line) => (JSON.parse(line) as { status: number }).status);
}, 300_000);

afterAll(async () => {
  await harness?.close();
});

describe.each(MODELS)('@anthropic-ai/sdk 1.14 and LangChain on %s (Node 24)', (model) => {
  it('messages.stream().finalMessage() equals the non-stream reply, usage included; message_start carries the input count', () => {
    const outcome = report[model]!.finalMessage;
    expect(outcome.ok, outcome.message).toBe(true);
    const value = outcome.value!;
    expect(value.stopReason).toBe('end_turn');
    expect(value.text).toBe(value.wholeText);
    // The vendor's count, or where it tells it only at the end the gateway's, which is the count it bills.
    expect(value.startInput).toBe(value.usage.input_tokens);
    expect(value.usage.input_tokens).toBeGreaterThan(0);
    expect(value.usage).toEqual(
      expect.objectContaining({
        input_tokens: value.wholeUsage.input_tokens,
        output_tokens: value.wholeUsage.output_tokens,
      }),
    );
  });

  it('beta.messages.toolRunner runs the tool loop: its thread is refused (400 thread_unsupported_request) and it replays without one', () => {
    for (const outcome of [report[model]!.toolRunnerThreaded, report[model]!.toolRunnerNoThread]) {
      expect(outcome.ok, outcome.message).toBe(true);
      expect(outcome.value!.stops).toEqual(['tool_use', 'end_turn']);
      // The second turn quotes the tool's result: the runner sent it back and the model read it.
      expect(outcome.value!.finalText).toContain('glossary entry for');
    }
    // One refused thread per threaded runner (one per model), and nothing else refused.
    expect(messageStatuses.filter((status) => status === 400)).toHaveLength(MODELS.length);
    expect(messageStatuses.filter((status) => status !== 400 && status !== 200)).toEqual([]);
  });

  it("LangChain's ChatAnthropic streams usage: output counted; input as message_start says it, the gateway's count where the vendor tells it only at the end", () => {
    const outcome = report[model]!.langchain;
    expect(outcome.ok, outcome.message).toBe(true);
    const { streamedUsage, invokedUsage } = outcome.value!;
    expect(invokedUsage.input_tokens).toBeGreaterThan(0);
    expect(streamedUsage.output_tokens).toBeGreaterThan(0);
    // LangChain reads the input from message_start only (message_delta's is ignored by its chunk mapping).
    expect(streamedUsage.input_tokens).toBeGreaterThan(0);
    expect(streamedUsage.input_tokens).toBe(invokedUsage.input_tokens);
    expect(streamedUsage.total_tokens).toBe(streamedUsage.input_tokens + streamedUsage.output_tokens);
  });
});
