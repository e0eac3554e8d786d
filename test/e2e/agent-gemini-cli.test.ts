/**
 * Gemini CLI (the real CLI, pinned in test/agents) against the gateway in demo mode, one model of each family,
 * configured as a non-interactive user configures it: GOOGLE_GEMINI_BASE_URL and GEMINI_API_KEY in its environment,
 * a fresh HOME, GEMINI_CLI_TRUST_WORKSPACE (headless runs refuse an untrusted directory otherwise), and the auth type
 * in the user settings file. The last is needed because 0.61 picks its "gateway" auth type when
 * GOOGLE_GEMINI_BASE_URL is set and then refuses it in `-p` mode ("Invalid auth method selected."); the API-key type
 * uses the same base URL and key. Three scenarios per model: a one-shot answer, the `stream-json` output, and a
 * tool round trip (the simulator's directive makes the model call the CLI's own `read_file` on a file of this test;
 * the next turn quotes it). Every call the CLI makes must succeed.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AGENT_TEST_TIMEOUT_MS as TEST_TIMEOUT_MS,
  expectAllCallsSucceeded,
  requestsSince,
  runAgent,
  type AgentRun,
  writeGeminiSettings,
  type LoggedRequest,
} from '../helpers/agent-cli.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const MODELS = ['alpha-sonnet-5', 'beta-5.4', 'gamma-2.5-pro', 'delta-v4-flash'] as const;

let harness: TestGateway;
let key: string;
let workDir: string;
let home: string;

beforeAll(async () => {
  // Keep-alives after 200 ms of silence, so the paused-stream case below sends several.
  harness = await startTestGateway({ demo: true, env: { STREAM_KEEPALIVE_MS: '200' } });
  ({ key } = await harness.createAccountWithKey());
  workDir = mkdtempSync(join(tmpdir(), 'tollgate-gemini-work-'));
  home = mkdtempSync(join(tmpdir(), 'tollgate-gemini-home-'));
  writeGeminiSettings(home);
}, 60_000);

afterAll(async () => {
  await harness?.close();
  for (const directory of [workDir, home])
    if (directory !== undefined) rmSync(directory, { recursive: true, force: true });
});

/** Runs `gemini` with only its user's configuration: the gateway's address and key, a fresh HOME. */
function gemini(args: string[]): Promise<AgentRun> {
  const env = {
    HOME: home,
    GOOGLE_GEMINI_BASE_URL: harness.gateway.url,
    GEMINI_API_KEY: key,
    GEMINI_CLI_TRUST_WORKSPACE: 'true',
  };
  return runAgent('gemini', args, workDir, env);
}

/** Every call succeeded, the model's streamGenerateContent among them; returns all the calls. */
function expectGeminiCallsSucceeded(from: number, model: string): LoggedRequest[] {
  return expectAllCallsSucceeded(harness, from, `/v1beta/models/${model}:streamGenerateContent`);
}

type StreamLine = {
  type: string;
  role?: string;
  content?: string;
  tool_name?: string;
  status?: string;
  output?: string;
  stats?: { input_tokens?: number; output_tokens?: number; total_tokens?: number };
};

function parseStreamJson(stdout: string): StreamLine[] {
  return stdout
    .split('\n')
    .filter((line) => line.trim().startsWith('{'))
    .map((line) => JSON.parse(line) as StreamLine);
}

function assistantText(lines: StreamLine[]): string {
  return lines
    .filter((line) => line.type === 'message' && line.role === 'assistant')
    .map((line) => line.content ?? '')
    .join('');
}

describe.each(MODELS)('Gemini CLI 0.61 on %s', (model) => {
  it(
    'answers a one-shot -p prompt',
    async () => {
      const from = harness.logs.length;
      const run = await gemini(['-p', 'Say hi to the toll gate.', '-m', model]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toContain('You said:');
      expectGeminiCallsSucceeded(from, model);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'streams its answer with --output-format stream-json, usage counted',
    async () => {
      const from = harness.logs.length;
      const run = await gemini(['-p', 'Describe a river in one line.', '-m', model, '--output-format', 'stream-json']);
      expect(run.code, run.stderr).toBe(0);
      const lines = parseStreamJson(run.stdout);
      expect(assistantText(lines)).toContain('You said:');
      const result = lines.at(-1)!;
      expect(result).toMatchObject({ type: 'result', status: 'success' });
      // The CLI reads the usage from the stream's last chunk: the prompt's tokens arrive, not 0.
      expect(result.stats?.input_tokens ?? 0).toBeGreaterThan(0);
      expect(result.stats?.output_tokens ?? 0).toBeGreaterThan(0);
      expectGeminiCallsSucceeded(from, model);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'keeps reading a stream the vendor pauses for 1.5 s, keep-alives and all',
    async () => {
      const from = harness.logs.length;
      const run = await gemini(['-p', 'Say hi. [[sim stall-mid-stream delay=1500 after=2]]', '-m', model]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toContain('You said:');
      // One call: the CLI did not retry a stream it could not parse.
      expect(expectGeminiCallsSucceeded(from, model)).toHaveLength(1);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'attaches an image with @file: the CLI counts the prompt with :countTokens first, then sends it',
    async () => {
      // A 1×1 PNG. DeepSeek models take no images: the gateway says so with a 400 the CLI reports.
      writeFileSync(
        join(workDir, 'pixel.png'),
        Buffer.from(
          'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
          'base64',
        ),
      );
      const from = harness.logs.length;
      const run = await gemini(['-p', 'Describe @pixel.png in one line.', '-m', model]);
      const calls = requestsSince(harness, from);
      if (model.startsWith('delta-')) {
        // Refused where the CLI first asks (400 naming the image), nothing billed; no turn is answered.
        expect(calls.find((call) => call.url === `/v1beta/models/${model}:countTokens`)?.status).toBe(400);
        expect(calls.filter((call) => call.status === 200)).toEqual([]);
        return;
      }
      expect(calls.find((call) => call.url === `/v1beta/models/${model}:countTokens`)?.status).toBe(200);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toContain('You said:');
      expectGeminiCallsSucceeded(from, model);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'reads a file with its read_file tool and quotes it in the next turn',
    async () => {
      const secret = `the toll is ${model.length * 7} copper coins at ${model}`;
      const file = join(workDir, `notes-${model}.txt`);
      writeFileSync(file, `${secret}\n`);
      const directive = `[[sim tool=read_file args=${encodeURIComponent(JSON.stringify({ file_path: file }))}]]`;
      const from = harness.logs.length;
      const run = await gemini([
        '-p',
        `Read my notes file and tell me the toll. ${directive}`,
        '-m',
        model,
        '--output-format',
        'stream-json',
      ]);
      expect(run.code, run.stderr).toBe(0);
      const lines = parseStreamJson(run.stdout);
      expect(lines.filter((line) => line.type === 'tool_use').map((line) => line.tool_name)).toEqual(['read_file']);
      expect(lines.filter((line) => line.type === 'tool_result').map((line) => line.status)).toEqual(['success']);
      // The second turn quotes the tool's output: the CLI sent the functionResponse back and the model read it.
      expect(assistantText(lines)).toContain(secret);
      expect(lines.at(-1)).toMatchObject({ type: 'result', status: 'success' });
      const calls = expectGeminiCallsSucceeded(from, model);
      expect(calls.filter((call) => call.url.endsWith(':streamGenerateContent')).length).toBeGreaterThanOrEqual(2);
    },
    TEST_TIMEOUT_MS,
  );
});
