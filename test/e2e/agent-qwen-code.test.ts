/**
 * Qwen Code (the real CLI, pinned in test/agents) against the gateway in demo mode, in both of its API-key modes,
 * configured only as its users configure them: `--auth-type openai` with OPENAI_BASE_URL, OPENAI_API_KEY and
 * OPENAI_MODEL (Chat Completions), or `--auth-type anthropic` with ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY and
 * ANTHROPIC_MODEL (Messages), in a fresh HOME, running a prompt headless with `-o json`. Qwen Code 0.24 needs
 * Node >= 22: the package's Node 24 comes first on its PATH. QWEN_USAGE_STATISTICS_ENABLED=false stops its usage
 * statistics upload, the only call it makes besides the gateway's.
 *
 * In Anthropic mode Qwen Code asks for thinking with `budget_tokens` equal to `max_tokens` (32000 each), which
 * Anthropic's API refuses; the gateway serves it with the budget lowered, so every model answers.
 *
 * Per mode and family: a one-shot answer, and a round of Qwen Code's own `read_file` tool (the simulator's directive
 * makes the model call it on a file of this test; the next turn quotes the file). Every call must succeed, and the
 * calls Qwen Code counted are the ones the gateway billed to the run's fresh account, with the same output tokens.
 * Then the refusals no retry can fix, a revoked key (401) and an exhausted balance (403): one call each, its reason
 * shown to the user.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AGENT_TEST_TIMEOUT_MS as TEST_TIMEOUT_MS,
  type AgentGateways,
  expectAllCallsSucceeded,
  expectRefusedOnce,
  REFUSAL_FAILS_FAST_MS,
  revokedKey,
  runAgent,
  startAgentGateways,
  type AgentRun,
  usageRecords,
} from '../helpers/agent-cli.js';
import { NODE_24 } from '../helpers/agents-package.js';
import type { TestGateway } from '../helpers/test-gateway.js';

const MODELS = ['alpha-sonnet-5', 'beta-5.4', 'gamma-2.5-pro', 'delta-v4-flash'] as const;

/** The two modes: the gateway route each calls, and the environment that points it at the gateway. */
const MODES = {
  openai: {
    route: '/v1/chat/completions',
    env: (url: string, key: string, model: string) => ({
      OPENAI_BASE_URL: `${url}/v1`,
      OPENAI_API_KEY: key,
      OPENAI_MODEL: model,
    }),
  },
  anthropic: {
    route: '/v1/messages',
    env: (url: string, key: string, model: string) => ({
      ANTHROPIC_BASE_URL: url,
      ANTHROPIC_API_KEY: key,
      ANTHROPIC_MODEL: model,
    }),
  },
} as const;
type Mode = keyof typeof MODES;

let gateways: AgentGateways;
let harness: TestGateway;
let unfunded: TestGateway;
let root: string;
let workDir: string;

beforeAll(async () => {
  gateways = await startAgentGateways('qwen');
  ({ harness, unfunded, root, workDir } = gateways);
}, 60_000);

afterAll(() => gateways?.close());

/** Runs `qwen --auth-type <mode> -o json <prompt>` in the work directory as a first-time user of `gateway` with `key`. */
async function qwen(
  mode: Mode,
  model: string,
  key: string,
  prompt: string,
  gateway: TestGateway = harness,
): Promise<AgentRun & { elapsedMs: number }> {
  const env = {
    PATH: `${dirname(NODE_24)}:/usr/local/bin:/usr/bin:/bin`,
    HOME: mkdtempSync(join(root, 'home-')),
    QWEN_USAGE_STATISTICS_ENABLED: 'false',
    ...MODES[mode].env(gateway.gateway.url, key, model),
  };
  const started = performance.now();
  const run = await runAgent('qwen', ['--auth-type', mode, '-o', 'json', prompt], workDir, env);
  return { ...run, elapsedMs: performance.now() - started };
}

/** The messages `-o json` prints: one JSON array, Claude Code's stream-json shapes. */
interface QwenMessage {
  type: string;
  subtype?: string;
  is_error?: boolean;
  result?: string;
  message?: { content?: Array<{ type: string; name?: string; input?: unknown; text?: string; content?: unknown }> };
  stats?: {
    models?: Record<string, { api: { totalRequests: number; totalErrors: number }; tokens: { candidates: number } }>;
  };
}

function blocks(messages: QwenMessage[], type: string, blockType: string) {
  return messages
    .filter((message) => message.type === type)
    .flatMap((message) => message.message?.content ?? [])
    .filter((block) => block.type === blockType);
}

/**
 * The run ended in success, every call it made since `from` succeeded, and the gateway billed exactly the calls Qwen
 * Code counted (its answer and any background call, such as its memory extractor's) with the output tokens it read.
 */
async function expectSuccessBilled(
  mode: Mode,
  model: string,
  key: string,
  from: number,
  run: AgentRun,
): Promise<QwenMessage> {
  expect(run.code, run.stderr + run.stdout).toBe(0);
  const result = (JSON.parse(run.stdout) as QwenMessage[]).at(-1)!;
  expect(result).toMatchObject({ type: 'result', subtype: 'success', is_error: false });
  await harness.flushLogs();
  expectAllCallsSucceeded(harness, from, MODES[mode].route);
  const counted = result.stats?.models?.[model];
  expect(counted?.api.totalErrors).toBe(0);
  const billed = await usageRecords(harness, key);
  expect(billed.map((record) => [record.route, record.status])).toEqual(
    Array.from({ length: counted?.api.totalRequests ?? 0 }, () => [MODES[mode].route, 'ok']),
  );
  const billedOutput = billed.reduce((sum, record) => sum + record.output_tokens, 0);
  expect(billedOutput).toBe(counted?.tokens.candidates);
  return result;
}

async function oneShot(mode: Mode, model: string): Promise<void> {
  const { key } = await harness.createAccountWithKey();
  const from = harness.logs.length;
  const run = await qwen(mode, model, key, 'Say hi to the toll gate.');
  const result = await expectSuccessBilled(mode, model, key, from, run);
  // The simulator echoes the user turn, which Qwen Code opens with its own system reminder before the prompt.
  expect(result.result).toMatch(/^You said: "<system-reminder>/);
}

async function readToolRound(mode: Mode, model: string): Promise<void> {
  const { key } = await harness.createAccountWithKey();
  const secret = `the toll is ${model.length * 7} copper coins at ${mode}/${model}`;
  const file = join(workDir, `notes-${mode}-${model}.txt`);
  writeFileSync(file, `${secret}\n`);
  const directive = `[[sim tool=read_file args=${encodeURIComponent(JSON.stringify({ file_path: file }))}]]`;
  const from = harness.logs.length;
  const run = await qwen(mode, model, key, `Read my notes file and tell me the toll. ${directive}`);
  const result = await expectSuccessBilled(mode, model, key, from, run);
  const messages = JSON.parse(run.stdout) as QwenMessage[];
  expect(blocks(messages, 'assistant', 'tool_use').map((block) => [block.name, block.input])).toEqual([
    ['read_file', { file_path: file }],
  ]);
  expect(JSON.stringify(blocks(messages, 'user', 'tool_result'))).toContain(secret);
  // The second turn quotes the tool's output: Qwen Code sent the result back and the model read it.
  expect(result.result).toContain(secret);
}

// Every run has its own HOME and account, so they all run at once; the refusals come after them, since they fail
// calls that the successful runs' checks would otherwise see.
for (const mode of Object.keys(MODES) as Mode[]) {
  for (const model of MODELS) {
    const where = `in its ${mode} mode on ${model}`;
    it.concurrent(
      `answers a one-shot prompt ${where}, billed as it counted`,
      () => oneShot(mode, model),
      TEST_TIMEOUT_MS,
    );
    it.concurrent(
      `reads a file with its read_file tool ${where} and quotes it`,
      () => readToolRound(mode, model),
      TEST_TIMEOUT_MS,
    );
  }
}

describe.each(Object.keys(MODES) as Mode[])('Qwen Code in its %s mode refused by the gateway', (mode) => {
  /** Runs a prompt that `gateway` refuses; asserts Qwen Code failed fast, showing `reason`, after one call. */
  async function expectRefusal(gateway: TestGateway, key: string, status: number, reason: RegExp): Promise<void> {
    await gateway.flushLogs();
    const from = gateway.logs.length;
    const run = await qwen(mode, 'beta-5.4', key, 'Say hi to the toll gate.', gateway);
    const output = run.stdout + run.stderr;
    expect(run.code, output).not.toBe(0);
    expect(output).toMatch(reason);
    expect(run.elapsedMs, output).toBeLessThan(REFUSAL_FAILS_FAST_MS);
    await expectRefusedOnce(gateway, from, MODES[mode].route, status);
  }

  it(
    'fails fast with the 401 text when its key is revoked',
    async () => expectRefusal(harness, await revokedKey(harness), 401, /401 .*This API key has been revoked\./),
    TEST_TIMEOUT_MS,
  );

  it(
    'shows an exhausted balance as the reason, and does not retry',
    async () => {
      const { key } = await unfunded.createAccountWithKey();
      // Each protocol's wording: Anthropic's billing error, the gateway's own in OpenAI's shape.
      await expectRefusal(
        unfunded,
        key,
        403,
        /403 .*(Credit balance is too low|Insufficient balance: this request needs \$)/,
      );
    },
    TEST_TIMEOUT_MS,
  );
});
