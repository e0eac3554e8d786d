/**
 * Claude Code (the real CLI, pinned in test/agents) against the gateway in demo mode, one model of each family,
 * configured only as its users configure it: ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY in its environment, a fresh
 * HOME, and the command-line flags of a `-p` user. Three scenarios per model: a one-shot answer, the
 * `stream-json` output, and a tool round trip (the simulator's directive makes the model call Claude Code's own
 * `Read` tool on a file of this test; the next turn quotes the file). Every call Claude Code makes must succeed.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentBin } from '../helpers/agents-package.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const MODELS = ['alpha-sonnet-5', 'beta-5.4', 'gamma-2.5-pro', 'delta-v4-flash'] as const;
/** Generous: a loaded 2-core machine runs several suites at once; these bound a hang, they time nothing. */
const RUN_TIMEOUT_MS = 240_000;
const TEST_TIMEOUT_MS = 300_000;

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
  for (const directory of [workDir, home]) if (directory !== undefined) rmSync(directory, { recursive: true, force: true });
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `claude` with only its user's configuration: the gateway's address and key, a fresh HOME, a plain PATH. */
function claude(args: string[]): Promise<Run> {
  const env = { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: home, ANTHROPIC_BASE_URL: harness.gateway.url, ANTHROPIC_API_KEY: key };
  return new Promise((resolve) => {
    const child = execFile(agentBin('claude'), args, { cwd: workDir, env, timeout: RUN_TIMEOUT_MS, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr });
    });
    child.stdin?.end();
  });
}

/** The gateway's request log lines written since `from`: every call Claude Code made, with its status. */
function requestsSince(from: number): Array<{ method: string; url: string; status: number }> {
  return harness.logs
    .slice(from)
    .flatMap((chunk) => chunk.split('\n'))
    .filter((line) => line.includes('"msg":"request"'))
    .map((line) => JSON.parse(line) as { method: string; url: string; status: number });
}

function expectAllCallsSucceeded(from: number): void {
  const calls = requestsSince(from);
  expect(calls.some((call) => call.url === '/v1/messages')).toBe(true);
  expect(calls.filter((call) => call.status >= 400)).toEqual([]);
}

type StreamLine = { type: string; subtype?: string; message?: { content?: Array<{ type: string; name?: string; text?: string; content?: unknown }> }; result?: string; is_error?: boolean; usage?: { input_tokens?: number; output_tokens?: number } };

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
      const run = await claude(['-p', 'Say hi to the toll gate.', '--model', model]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout.trim().length).toBeGreaterThan(0);
      expect(run.stdout).not.toMatch(/API Error/);
      expectAllCallsSucceeded(from);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'streams its answer with --output-format stream-json',
    async () => {
      const from = harness.logs.length;
      const run = await claude(['-p', 'Describe a river in one line.', '--model', model, '--output-format', 'stream-json', '--verbose']);
      expect(run.code, run.stderr).toBe(0);
      const lines = parseStreamJson(run.stdout);
      expect(lines.some((line) => line.type === 'assistant' && line.message?.content?.some((block) => block.type === 'text' && (block.text ?? '').length > 0))).toBe(true);
      const result = lines.at(-1)!;
      expect(result).toMatchObject({ type: 'result', subtype: 'success', is_error: false });
      // Claude Code reads the usage from the stream: the prompt's tokens arrive, not 0.
      expect(result.usage?.input_tokens ?? 0).toBeGreaterThan(0);
      expect(result.usage?.output_tokens ?? 0).toBeGreaterThan(0);
      expectAllCallsSucceeded(from);
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
      const run = await claude(['-p', `Read my notes file and tell me the toll. ${directive}`, '--model', model, '--output-format', 'stream-json', '--verbose']);
      expect(run.code, run.stderr).toBe(0);
      const lines = parseStreamJson(run.stdout);
      const calls = lines.flatMap((line) => (line.type === 'assistant' ? (line.message?.content ?? []) : [])).filter((block) => block.type === 'tool_use');
      expect(calls.map((block) => block.name)).toContain('Read');
      const results = lines.flatMap((line) => (line.type === 'user' ? (line.message?.content ?? []) : [])).filter((block) => block.type === 'tool_result');
      expect(JSON.stringify(results)).toContain(secret);
      const result = lines.at(-1)!;
      expect(result).toMatchObject({ type: 'result', subtype: 'success', is_error: false });
      expect(result.result).toContain(secret);
      expectAllCallsSucceeded(from);
    },
    TEST_TIMEOUT_MS,
  );
});
