/**
 * Claude Code and Codex (the real CLIs, pinned in test/agents) on a conversation that grows past the model's context
 * window, which the operator has lowered (`models.<id>.contextWindow`) so a few turns pass it. Each agent is set up
 * as docs/clients.md says, its window included; the gateway refuses the turn that does not fit in the words the agent
 * knows. Claude Code then compacts the conversation and the gateway serves the retry; Codex does not compact a turn
 * the server refused, and tells its user the context window is full, while with its auto-compact limit set below the
 * window it compacts first and the turn is served. A refused turn is never billed.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AGENT_TEST_TIMEOUT_MS as TEST_TIMEOUT_MS,
  type AgentRun,
  jsonLines,
  requestsSince,
  runAgent,
  writeCodexConfig,
} from '../helpers/agent-cli.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

/**
 * Claude Code's first turn is about 10,600 tokens (system prompt and tools), a ledger about 8,000: a session that read
 * one ledger and is given another (about 30,000) does not fit, one compacted to a summary (about 22,000 while
 * compacting, 20,000 after) does.
 */
const CLAUDE_WINDOW = 24_000;
/** A window no compaction gets a single read of the long ledger under. */
const CLAUDE_SMALL_WINDOW = 16_000;
/** Codex's first turn is about 7,800 tokens; its third here about 22,000 uncompacted, 18,000 compacted. */
const CODEX_WINDOW = 20_000;
const CODEX_AUTO_COMPACT = 12_000;

let harness: TestGateway;
let key: string;
let workDir: string;
const homes: string[] = [];

function ledger(name: string, lines: number): string {
  return Array.from(
    { length: lines },
    (_, i) => `${name} gate line ${i}: the toll keeper counts carts, wagons and riders crossing the bridge ${i * 7}`,
  ).join('\n');
}

beforeAll(async () => {
  const yaml = [
    'models:',
    `  alpha-sonnet-5: { contextWindow: ${CLAUDE_WINDOW} }`,
    `  alpha-haiku-4-5: { contextWindow: ${CLAUDE_SMALL_WINDOW} }`,
    `  beta-5.4: { contextWindow: ${CODEX_WINDOW} }`,
    '',
  ].join('\n');
  harness = await startTestGateway({ demo: true, yaml });
  ({ key } = await harness.createAccountWithKey());
  workDir = mkdtempSync(join(tmpdir(), 'tollgate-context-work-'));
  writeFileSync(join(workDir, 'east.txt'), ledger('east', 400));
  writeFileSync(join(workDir, 'west.txt'), ledger('west', 400));
  writeFileSync(join(workDir, 'long.txt'), ledger('long', 900));
}, 60_000);

afterAll(async () => {
  await harness?.close();
  for (const directory of [workDir, ...homes])
    if (directory !== undefined) rmSync(directory, { recursive: true, force: true });
});

function freshHome(prefix: string): string {
  const home = mkdtempSync(join(tmpdir(), prefix));
  homes.push(home);
  return home;
}

/** Ids of the requests billed to the key (every usage record). */
async function billedRequestIds(): Promise<Set<string>> {
  const response = await fetch(`${harness.openaiBaseUrl}/usage/requests?limit=100`, {
    headers: { authorization: `Bearer ${key}` },
  });
  const page = (await response.json()) as { data: Array<{ request_id: string }> };
  return new Set(page.data.map((record) => record.request_id));
}

interface StreamEvent {
  type: string;
  subtype?: string;
  compact_result?: string;
  compact_metadata?: { trigger: string; pre_tokens: number };
  is_error?: boolean;
  result?: string;
  terminal_reason?: string;
}

/** The prompt that makes the simulated model call Claude Code's Read tool on `file`. */
function readPrompt(file: string): string {
  const args = encodeURIComponent(JSON.stringify({ file_path: join(workDir, file) }));
  return `Read the ${file} ledger. [[sim tool=Read args=${args}]]`;
}

describe('Claude Code past the window', () => {
  /** `claude -p` as docs/clients.md sets it up, the model's window told in CLAUDE_CODE_MAX_CONTEXT_TOKENS. */
  function claude(home: string, model: string, prompt: string, resume = false): Promise<AgentRun> {
    const args = [...(resume ? ['--continue'] : []), '-p', prompt, '--model', model];
    return runAgent('claude', [...args, '--output-format', 'stream-json', '--verbose'], workDir, {
      HOME: home,
      ANTHROPIC_BASE_URL: harness.gateway.url,
      ANTHROPIC_API_KEY: key,
      CLAUDE_CODE_MAX_CONTEXT_TOKENS: '200000',
    });
  }

  it(
    'compacts on "prompt is too long" and the gateway serves the compacted turn',
    async () => {
      const home = freshHome('tollgate-context-claude-');
      const first = await claude(home, 'alpha-sonnet-5', readPrompt('east.txt'));
      expect(first.code, first.stderr).toBe(0);
      // Told the window, it no longer guesses one for an id it does not know.
      expect(first.stderr).not.toMatch(/doesn't recognize the model/);

      const from = harness.logs.length;
      const west = readFileSync(join(workDir, 'west.txt'), 'utf8');
      const second = await claude(
        home,
        'alpha-sonnet-5',
        `Here is the west ledger:\n${west}\nWhich line is last?`,
        true,
      );
      expect(second.code, second.stderr).toBe(0);
      const events = jsonLines<StreamEvent>(second.stdout);
      const boundary = events.find((event) => event.subtype === 'compact_boundary');
      // It compacted because of the refusal, sized by the count the refusal named.
      expect(boundary?.compact_metadata?.trigger).toBe('auto');
      expect(boundary?.compact_metadata?.pre_tokens).toBeGreaterThan(CLAUDE_WINDOW);
      expect(events.some((event) => event.compact_result === 'success')).toBe(true);
      const result = events.find((event) => event.type === 'result');
      expect(result?.is_error, second.stdout.slice(-2000)).toBe(false);

      await harness.flushLogs();
      const messages = requestsSince(harness, from).filter((call) => call.url === '/v1/messages');
      // One refusal, then the compaction and the compacted turn, all served.
      expect(messages[0]?.status).toBe(400);
      expect(messages.slice(1).length).toBeGreaterThanOrEqual(2);
      expect(messages.slice(1).every((call) => call.status === 200)).toBe(true);
      const billed = await billedRequestIds();
      expect(billed.has(messages[0]!.reqId)).toBe(false);
      for (const call of messages.slice(1)) expect(billed.has(call.reqId)).toBe(true);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'tells its user the prompt is too long when no compaction fits',
    async () => {
      const from = harness.logs.length;
      const run = await claude(freshHome('tollgate-context-claude-'), 'alpha-haiku-4-5', readPrompt('long.txt'));
      const result = jsonLines<StreamEvent>(run.stdout).find((event) => event.type === 'result');
      expect(result?.is_error).toBe(true);
      expect(result?.result).toBe('Prompt is too long');
      expect(result?.terminal_reason).toBe('prompt_too_long');
      await harness.flushLogs();
      const refused = requestsSince(harness, from).filter((call) => call.status === 400);
      expect(refused.length).toBeGreaterThan(0);
      expect(refused.every((call) => call.url === '/v1/messages')).toBe(true);
    },
    TEST_TIMEOUT_MS,
  );
});

describe('Codex past the window', () => {
  interface CodexEvent {
    type: string;
    message?: string;
    error?: { message: string };
  }

  /** Three turns of one thread (`exec`, then `exec resume --last`), the second and third each with a ledger. */
  async function conversation(codexHome: string): Promise<{ runs: AgentRun[]; from: number }> {
    const env = { HOME: join(codexHome, 'home'), CODEX_HOME: codexHome, TOLLGATE_API_KEY: key };
    const common = ['--json', '--skip-git-repo-check', '-m', 'beta-5.4'];
    const runs = [await runAgent('codex', ['exec', ...common, 'Say hello to the toll keeper.'], workDir, env)];
    const east = ledger('east', 250);
    // A long answer to the second turn: what a compaction summarises away.
    const second = `Here is the ledger:\n${east}\nWhich line is last? [[sim words=3000]]`;
    runs.push(await runAgent('codex', ['exec', 'resume', '--last', ...common, second], workDir, env));
    const from = harness.logs.length;
    const third = `Here is the ledger again:\n${east}\nWhich line is first?`;
    runs.push(await runAgent('codex', ['exec', 'resume', '--last', ...common, third], workDir, env));
    await harness.flushLogs();
    return { runs, from };
  }

  it(
    'tells its user the context window is full when the gateway refuses the turn',
    async () => {
      const codexHome = freshHome('tollgate-context-codex-');
      writeCodexConfig(codexHome, harness.gateway.url);
      const { runs, from } = await conversation(codexHome);
      expect(runs[0]!.code, runs[0]!.stderr).toBe(0);
      expect(runs[1]!.code, runs[1]!.stderr).toBe(0);
      const failed = jsonLines<CodexEvent>(runs[2]!.stdout).find((event) => event.type === 'turn.failed');
      expect(failed?.error?.message).toMatch(/Codex ran out of room in the model's context window/);
      const calls = requestsSince(harness, from).filter((call) => call.url === '/v1/responses');
      expect(calls.map((call) => call.status)).toEqual([400]);
      expect((await billedRequestIds()).has(calls[0]!.reqId)).toBe(false);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'compacts first and is served when its window and auto-compact limit are set',
    async () => {
      const codexHome = freshHome('tollgate-context-codex-');
      const windowSettings = [
        `model_context_window = ${CODEX_WINDOW}`,
        `model_auto_compact_token_limit = ${CODEX_AUTO_COMPACT}`,
      ];
      writeCodexConfig(codexHome, harness.gateway.url, windowSettings);
      const { runs, from } = await conversation(codexHome);
      for (const run of runs) expect(run.code, run.stderr).toBe(0);
      expect(
        jsonLines<CodexEvent>(runs[2]!.stdout).some((event) => event.type === 'turn.failed' || event.type === 'error'),
      ).toBe(false);
      const calls = requestsSince(harness, from).filter((call) => call.url === '/v1/responses');
      // The compaction turn, then the turn itself.
      expect(calls.map((call) => call.status)).toEqual([200, 200]);
    },
    TEST_TIMEOUT_MS,
  );
});
