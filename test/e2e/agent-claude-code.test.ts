/**
 * Claude Code (the real CLI, pinned in test/agents) against the gateway in demo mode, one model of each family,
 * configured only as its users configure it: ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY and the model's window
 * (CLAUDE_CODE_MAX_CONTEXT_TOKENS, as docs/clients.md says) in its environment, a fresh HOME, and the command-line flags of a `-p` user. Three scenarios per model: a one-shot answer, the
 * `stream-json` output, and a tool round trip (the simulator's directive makes the model call Claude Code's own
 * `Read` tool on a file of this test; the next turn quotes the file). Every call Claude Code makes must succeed.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AGENT_TEST_TIMEOUT_MS as TEST_TIMEOUT_MS,
  expectAllCallsSucceeded,
  runAgent,
  type AgentRun,
} from '../helpers/agent-cli.js';
import { MODEL_DEFINITIONS } from '../../src/catalog/models.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const MODELS = ['alpha-sonnet-5', 'beta-5.4', 'gamma-2.5-pro', 'delta-v4-flash'] as const;

let harness: TestGateway;
let key: string;
let workDir: string;
let home: string;

beforeAll(async () => {
  harness = await startTestGateway({ demo: true });
  ({ key } = await harness.createAccountWithKey());
  workDir = mkdtempSync(join(tmpdir(), 'tollgate-claude-work-'));
  home = mkdtempSync(join(tmpdir(), 'tollgate-claude-home-'));
}, 60_000);

afterAll(async () => {
  await harness?.close();
  for (const directory of [workDir, home])
    if (directory !== undefined) rmSync(directory, { recursive: true, force: true });
});

/** Runs `claude` on a model with only its user's configuration: the gateway's address and key, the model's window. */
function claude(model: string, args: string[]): Promise<AgentRun> {
  const definition = MODEL_DEFINITIONS.find((candidate) => candidate.id === model);
  if (definition === undefined) throw new Error(`no catalog model ${model}`);
  return runAgent('claude', [...args, '--model', model], workDir, {
    HOME: home,
    ANTHROPIC_BASE_URL: harness.gateway.url,
    ANTHROPIC_API_KEY: key,
    CLAUDE_CODE_MAX_CONTEXT_TOKENS: String(definition.contextWindow),
  });
}

type StreamLine = {
  type: string;
  subtype?: string;
  message?: { content?: Array<{ type: string; name?: string; text?: string; content?: unknown }> };
  result?: string;
  is_error?: boolean;
  usage?: {
    input_tokens?: number;
    cache_read_input_tokens?: number;
    cache_creation_input_tokens?: number;
    output_tokens?: number;
  };
};

function parseStreamJson(stdout: string): StreamLine[] {
  return stdout
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as StreamLine);
}

describe.each(MODELS)('Claude Code on %s', (model) => {
  it(
    'answers a one-shot -p prompt',
    async () => {
      const from = harness.logs.length;
      const run = await claude(model, ['-p', 'Say hi to the toll gate.']);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout.trim().length).toBeGreaterThan(0);
      expect(run.stdout).not.toMatch(/API Error/);
      expect(run.stdout + run.stderr).not.toMatch(/doesn't recognize the model/);
      expectAllCallsSucceeded(harness, from, '/v1/messages');
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'streams its answer with --output-format stream-json',
    async () => {
      const from = harness.logs.length;
      const run = await claude(model, [
        '-p',
        'Describe a river in one line.',
        '--output-format',
        'stream-json',
        '--verbose',
      ]);
      expect(run.code, run.stderr).toBe(0);
      const lines = parseStreamJson(run.stdout);
      expect(
        lines.some(
          (line) =>
            line.type === 'assistant' &&
            line.message?.content?.some((block) => block.type === 'text' && (block.text ?? '').length > 0),
        ),
      ).toBe(true);
      const result = lines.at(-1)!;
      expect(result).toMatchObject({ type: 'result', subtype: 'success', is_error: false });
      // Claude Code reads the usage from the stream: the prompt's tokens arrive, not 0 (on OpenAI-format vendors
      // message_start has the gateway's count and message_delta the vendor's). On alpha its breakpoints cache the
      // prompt, so the prompt's tokens are the uncached, read and written ones together.
      const { input_tokens = 0, cache_read_input_tokens = 0, cache_creation_input_tokens = 0 } = result.usage ?? {};
      expect(input_tokens + cache_read_input_tokens + cache_creation_input_tokens).toBeGreaterThan(0);
      expect(result.usage?.output_tokens ?? 0).toBeGreaterThan(0);
      expectAllCallsSucceeded(harness, from, '/v1/messages');
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'reads a file with its Read tool and quotes it in the next turn',
    async () => {
      const secret = `the toll is ${model.length * 7} copper coins at ${model}`;
      const file = join(workDir, `notes-${model}.txt`);
      writeFileSync(file, `${secret}\n`);
      const directive = `[[sim tool=Read args=${encodeURIComponent(JSON.stringify({ file_path: file }))}]]`;
      const from = harness.logs.length;
      const run = await claude(model, [
        '-p',
        `Read my notes file and tell me the toll. ${directive}`,
        '--output-format',
        'stream-json',
        '--verbose',
      ]);
      expect(run.code, run.stderr).toBe(0);
      const lines = parseStreamJson(run.stdout);
      const calls = lines
        .flatMap((line) => (line.type === 'assistant' ? (line.message?.content ?? []) : []))
        .filter((block) => block.type === 'tool_use');
      expect(calls.map((block) => block.name)).toContain('Read');
      const results = lines
        .flatMap((line) => (line.type === 'user' ? (line.message?.content ?? []) : []))
        .filter((block) => block.type === 'tool_result');
      expect(JSON.stringify(results)).toContain(secret);
      const result = lines.at(-1)!;
      expect(result).toMatchObject({ type: 'result', subtype: 'success', is_error: false });
      expect(result.result).toContain(secret);
      expectAllCallsSucceeded(harness, from, '/v1/messages');
    },
    TEST_TIMEOUT_MS,
  );
});
