/**
 * Codex CLI (the real CLI, pinned in test/agents) against the gateway in demo mode, one model of each family,
 * configured only as its users configure it: a fresh CODEX_HOME whose config.toml names the gateway as a model
 * provider (`base_url`, `env_key`, `wire_api = "responses"`), the key in that environment variable, and `codex exec`.
 * Two scenarios per model: a one-shot answer, and a round of Codex's own shell tool (the simulator's directive makes
 * the model call `exec_command` on a file of this test; Codex runs it and the next turn quotes its output). Every call
 * Codex makes must succeed, and each is one billed usage record.
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
  writeCodexConfig,
} from '../helpers/agent-cli.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

/** One model per family; delta-r1 reasons, so its reasoning travels back to it through `encrypted_content`. */
const MODELS = ['alpha-sonnet-5', 'beta-5.4', 'gamma-2.5-pro', 'delta-r1'] as const;
const SECRET = 'tollgate-codex-secret-4711';

let harness: TestGateway;
let key: string;
let workDir: string;
let codexHome: string;

beforeAll(async () => {
  harness = await startTestGateway({ demo: true });
  ({ key } = await harness.createAccountWithKey());
  workDir = mkdtempSync(join(tmpdir(), 'tollgate-codex-work-'));
  codexHome = mkdtempSync(join(tmpdir(), 'tollgate-codex-home-'));
  writeFileSync(join(workDir, 'secret.txt'), `${SECRET}\n`);
  writeCodexConfig(codexHome, harness.gateway.url);
}, 60_000);

afterAll(async () => {
  await harness?.close();
  for (const directory of [workDir, codexHome])
    if (directory !== undefined) rmSync(directory, { recursive: true, force: true });
});

/** Runs `codex exec --json` with only its user's configuration: CODEX_HOME and the key variable. */
function codex(model: string, prompt: string): Promise<AgentRun> {
  const env = { HOME: join(codexHome, 'home'), CODEX_HOME: codexHome, TOLLGATE_API_KEY: key };
  return runAgent('codex', ['exec', '--json', '--skip-git-repo-check', '-m', model, prompt], workDir, env);
}

interface CodexEvent {
  type: string;
  item?: {
    type: string;
    text?: string;
    command?: string;
    aggregated_output?: string;
    exit_code?: number | null;
    message?: string;
  };
  usage?: { input_tokens: number; output_tokens: number };
}

function events(stdout: string): CodexEvent[] {
  return stdout
    .split('\n')
    .filter((line) => line.trim().startsWith('{'))
    .map((line) => JSON.parse(line) as CodexEvent);
}

async function usageRecordIds(): Promise<Set<string>> {
  const response = await fetch(`${harness.openaiBaseUrl}/usage/requests?limit=100`, {
    headers: { authorization: `Bearer ${key}` },
  });
  const page = (await response.json()) as { data: Array<{ request_id: string }> };
  return new Set(page.data.map((record) => record.request_id));
}

/** Every call succeeded; returns the `/v1/responses` calls (at least one). */
function expectResponsesCallsSucceeded(from: number): Array<{ reqId: string }> {
  return expectAllCallsSucceeded(harness, from, '/v1/responses').filter((call) => call.url === '/v1/responses');
}

describe.each(MODELS)('Codex CLI on %s', (model) => {
  it(
    'answers a one-shot prompt',
    async () => {
      const from = harness.logs.length;
      const run = await codex(model, 'Say hello to the toll keeper.');
      expect(run.code, run.stderr).toBe(0);
      const all = events(run.stdout);
      const message = all.find((event) => event.type === 'item.completed' && event.item?.type === 'agent_message');
      // The simulator's reply starts by echoing the prompt it got (Codex's environment context comes first).
      expect(message?.item?.text).toMatch(/^You said: /);
      const completed = all.find((event) => event.type === 'turn.completed');
      expect(completed?.usage?.input_tokens).toBeGreaterThan(0);
      expect(completed?.usage?.output_tokens).toBeGreaterThan(0);
      expect(all.some((event) => event.type === 'turn.failed' || event.type === 'error')).toBe(false);
      const calls = expectResponsesCallsSucceeded(from);
      const recorded = await usageRecordIds();
      for (const call of calls) expect(recorded.has(call.reqId)).toBe(true);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "runs a round of its shell tool and answers with the command's output",
    async () => {
      const from = harness.logs.length;
      const args = encodeURIComponent(JSON.stringify({ cmd: 'cat secret.txt' }));
      const run = await codex(model, `Show me the file. [[sim tool=exec_command args=${args}]]`);
      expect(run.code, run.stderr).toBe(0);
      const all = events(run.stdout);
      const command = all.find((event) => event.type === 'item.completed' && event.item?.type === 'command_execution');
      expect(command?.item?.command).toContain('cat secret.txt');
      expect(command?.item?.exit_code).toBe(0);
      expect(command?.item?.aggregated_output).toContain(SECRET);
      // The model's next turn saw the tool's output (the simulator quotes the tool results it was given).
      const message = all
        .filter((event) => event.type === 'item.completed' && event.item?.type === 'agent_message')
        .at(-1);
      expect(message?.item?.text).toContain(SECRET);
      const calls = expectResponsesCallsSucceeded(from);
      expect(calls.length).toBeGreaterThanOrEqual(2);
    },
    TEST_TIMEOUT_MS,
  );
});
