/**
 * Prompt caching with the real coding agents (pinned in test/agents), through the gateway in demo mode, whose
 * simulator keeps a real prompt cache with each vendor's rules:
 *
 * - Claude Code, configured only by its environment, marks its system prompt and the last message with
 *   `cache_control` (5-minute TTL unless ENABLE_PROMPT_CACHING_1H is set). A three-turn session (`-p`, then
 *   `--continue` with a round of its Read tool, then `--resume`) reads at least 80% of every prompt from the cache
 *   from turn 2 on, and every request is charged exactly what its vendor usage costs at list prices with
 *   Anthropic's cache rules. The same session sent straight to a standalone simulator reads the same tokens.
 * - Codex CLI (Responses API, `prompt_cache_key`, no breakpoints of its own) on alpha, where the gateway places
 *   breakpoints, and on beta, where the vendor caches by prefix; Gemini CLI (streamGenerateContent, implicit
 *   caching) on gamma. Each reads from the cache from its second request on, and is priced for it.
 *
 * Charges are compared with the vendor's own usage object the gateway kept for each request, priced here from
 * the catalog (test/helpers/vendor-usage-cost.ts), and with the ledger line of the same request.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import type { UsageRecord } from '../../src/storage/types.js';
import {
  AGENT_TEST_TIMEOUT_MS,
  requestsSince,
  runAgent,
  type AgentRun,
  writeCodexConfig,
  writeGeminiSettings,
} from '../helpers/agent-cli.js';
import { BUILT_CLI } from '../helpers/cli-path.js';
import { startTestGateway, stopProcess, type TestGateway } from '../helpers/test-gateway.js';
import { anthropicBill, vendorBill } from '../helpers/vendor-usage-cost.js';

const CLAUDE_MODEL = 'alpha-sonnet-5';
/**
 * One session id for every Claude Code session: `--resume` puts it in the prompt, so sessions compared token for
 * token share it (each runs in the same HOME path, emptied first).
 */
const SESSION_ID = '7011a7e0-5e55-4c0d-9d1e-70119a7e0001';
/** From turn 2 on, at least this share of each prompt is read from the cache. */
const MIN_READ_SHARE = 0.8;

let harness: TestGateway;
let key: string;
let accountId: string;
let workDir: string;
let notesFile: string;
const homes: string[] = [];

beforeAll(async () => {
  // No free allowance: every token is charged to the balance, so every charge is visible in the ledger.
  harness = await startTestGateway({ demo: true, env: { FREE_TOKENS_PER_DAY: '0' } });
  ({ key, accountId } = await harness.createAccountWithKey(undefined, 'enterprise'));
  await harness.gateway.storage.billing.credit({
    accountId,
    kind: 'topup',
    amountNano: parseUsd('100'),
    idempotencyKey: `agent-prompt-caching-${accountId}`,
    note: null,
    at: Date.now(),
  });
  workDir = mkdtempSync(join(tmpdir(), 'tollgate-cache-work-'));
  notesFile = join(workDir, 'notes.txt');
  writeFileSync(notesFile, 'the toll is 42 copper coins at the north gate\n');
}, 60_000);

afterAll(async () => {
  await harness?.close();
  for (const directory of [workDir, ...homes])
    if (directory !== undefined) rmSync(directory, { recursive: true, force: true });
});

function freshHome(name: string): string {
  const home = mkdtempSync(join(tmpdir(), `tollgate-cache-${name}-`));
  homes.push(home);
  return home;
}

/** The gateway's request ids of the calls made since `from` to `url`, in order; no call since failed. */
async function callsSince(from: number, url: string): Promise<string[]> {
  await harness.flushLogs();
  const calls = requestsSince(harness, from);
  expect(calls.filter((call) => call.status >= 400)).toEqual([]);
  return calls.filter((call) => call.url === url).map((call) => call.reqId);
}

/** The usage records of these requests, in the same order. */
async function records(requestIds: string[]): Promise<UsageRecord[]> {
  const found = await harness.gateway.storage.usage.findByRequestIds(accountId, requestIds);
  const byId = new Map(found.map((record) => [record.requestId, record]));
  return requestIds.map((id) => {
    const record = byId.get(id);
    if (record === undefined) throw new Error(`request ${id} has no usage record`);
    return record;
  });
}

/**
 * Every request is charged exactly the price of its vendor usage, in the usage record and in its ledger line, and
 * the gateway's cache split is the vendor's. Returns each request's bill.
 */
async function expectChargedAsVendorBilled(requestIds: string[]) {
  const rows = await records(requestIds);
  const ledger = await harness.gateway.storage.billing.ledger(accountId, 500);
  return rows.map((row) => {
    const bill = vendorBill(row.model, row.rawUsage);
    const raw = JSON.parse(row.rawUsage!) as Record<string, unknown>;
    expect(row.costNano, `${row.model} ${row.requestId}`).toBe(bill.costNano);
    expect(row.cacheReadTokens).toBe(bill.read);
    expect(row.cacheWriteTokens).toBe(bill.write5m + bill.write1h);
    expect(row.inputTokens + row.cacheReadTokens + row.cacheWriteTokens).toBe(bill.total);
    const charges = ledger.filter((entry) => entry.requestId === row.requestId);
    expect(charges.map((entry) => entry.amountNano)).toEqual([-bill.costNano]);
    return { ...bill, raw };
  });
}

// ---------------------------------------------------------------------------------------------------- Claude Code

interface ClaudeLine {
  type: string;
  subtype?: string;
  session_id?: string;
  is_error?: boolean;
  result?: string;
  message?: { id?: string; usage?: Record<string, unknown>; content?: Array<{ type: string; name?: string }> };
}

/** One `claude -p` run: its output lines and the prompt-side usage of each request it made, in order. */
interface ClaudeTurn {
  lines: ClaudeLine[];
  /** Per vendor reply (by message id, as Claude Code saw its message_start): the prompt usage. */
  usages: Array<Record<string, unknown>>;
}

function parseClaude(run: AgentRun): ClaudeTurn {
  expect(run.code, run.stderr).toBe(0);
  const lines = run.stdout
    .split('\n')
    .filter((line) => line.trim().startsWith('{'))
    .map((line) => JSON.parse(line) as ClaudeLine);
  expect(lines.at(-1)).toMatchObject({ type: 'result', subtype: 'success', is_error: false });
  const byMessage = new Map<string, Record<string, unknown>>();
  for (const line of lines)
    if (line.type === 'assistant' && line.message?.id !== undefined && line.message.usage !== undefined)
      byMessage.set(line.message.id, line.message.usage);
  return { lines, usages: [...byMessage.values()] };
}

/**
 * The three turns of one Claude Code session against `baseUrl`: a `-p` prompt, a `--continue` that makes it read
 * the notes file with its Read tool (two requests), a `--resume` of the session by id. Every session runs in the
 * same HOME path, emptied first: Claude Code's system prompt names its memory folder under HOME, so the path is
 * part of the prompt. `around` wraps each run (the gateway's side reads the requests it made).
 */
async function claudeSession<T>(
  baseUrl: string,
  apiKey: string,
  around: (run: () => Promise<ClaudeTurn>) => Promise<T>,
): Promise<T[]> {
  const home = join(workDir, '..', `${basename(workDir)}-claude-home`);
  rmSync(home, { recursive: true, force: true });
  mkdirSync(home);
  homes.push(home);
  const claude = async (args: string[]) =>
    parseClaude(
      await runAgent(
        'claude',
        [...args, '--model', CLAUDE_MODEL, '--output-format', 'stream-json', '--verbose'],
        workDir,
        { HOME: home, ANTHROPIC_BASE_URL: baseUrl, ANTHROPIC_API_KEY: apiKey },
      ),
    );
  const readNotes = `[[sim tool=Read args=${encodeURIComponent(JSON.stringify({ file_path: notesFile }))}]]`;
  const turns: T[] = [];
  turns.push(
    await around(async () => {
      const turn = await claude([
        '--session-id',
        SESSION_ID,
        '-p',
        'I am planning a trip over the toll bridge. Keep your answers short.',
      ]);
      expect(turn.lines.find((line) => line.type === 'system' && line.subtype === 'init')?.session_id).toBe(SESSION_ID);
      return turn;
    }),
  );
  turns.push(
    await around(async () => {
      const turn = await claude(['--continue', '-p', `Read my notes file and tell me the toll. ${readNotes}`]);
      const toolCalls = turn.lines
        .flatMap((line) => (line.type === 'assistant' ? (line.message?.content ?? []) : []))
        .filter((block) => block.type === 'tool_use');
      expect(toolCalls.map((block) => block.name)).toEqual(['Read']);
      expect(turn.lines.at(-1)?.result).toContain('42 copper coins');
      return turn;
    }),
  );
  turns.push(await around(() => claude(['--resume', SESSION_ID, '-p', 'Thanks. Say it once more in one line.'])));
  return turns;
}

/** The prompt side of an Anthropic usage: what Claude Code reads from message_start. */
function promptSide(usage: Record<string, unknown>) {
  const creation = (usage.cache_creation ?? {}) as Record<string, unknown>;
  return {
    input_tokens: usage.input_tokens,
    cache_read_input_tokens: usage.cache_read_input_tokens,
    cache_creation_input_tokens: usage.cache_creation_input_tokens,
    ephemeral_5m_input_tokens: creation.ephemeral_5m_input_tokens ?? 0,
    ephemeral_1h_input_tokens: creation.ephemeral_1h_input_tokens ?? 0,
  };
}

function readShare(usage: Record<string, unknown>): number {
  const bill = anthropicBill(CLAUDE_MODEL, usage);
  return bill.read / bill.total;
}

describe(`Claude Code on ${CLAUDE_MODEL}`, () => {
  interface GatewayTurn extends ClaudeTurn {
    requestIds: string[];
  }
  let throughGateway: GatewayTurn[];

  it(
    'reads at least 80% of each prompt from the cache from turn 2, each turn charged its vendor usage at cache prices',
    async () => {
      throughGateway = await claudeSession(harness.gateway.url, key, async (run) => {
        const from = harness.logs.length;
        const turn = await run();
        return { ...turn, requestIds: await callsSince(from, '/v1/messages') };
      });
      expect(throughGateway.map((turn) => turn.requestIds.length)).toEqual([1, 2, 1]);
      let charged = 0n;
      for (const [index, turn] of throughGateway.entries()) {
        const bills = await expectChargedAsVendorBilled(turn.requestIds);
        // Claude Code was told the prompt side the vendor reported, writes split by TTL (its message_start).
        expect(turn.usages.map(promptSide)).toEqual(bills.map((bill) => promptSide(bill.raw)));
        if (index === 0) {
          // The first turn writes its prompt to the cache (5-minute breakpoints: Claude Code's default).
          expect(bills[0]!.write5m).toBeGreaterThan(0);
          expect(bills[0]!.write1h).toBe(0);
        } else {
          for (const bill of bills) expect(bill.read / bill.total).toBeGreaterThanOrEqual(MIN_READ_SHARE);
        }
        charged += bills.reduce((sum, bill) => sum + bill.costNano, 0n);
      }
      const balance = await harness.gateway.storage.billing.balance(accountId);
      expect(balance?.balanceNano).toBe(parseUsd('100') - charged);
    },
    AGENT_TEST_TIMEOUT_MS,
  );

  it(
    'with ENABLE_PROMPT_CACHING_1H=1 writes 1-hour entries, charged at twice the input price',
    async () => {
      const env = {
        HOME: freshHome('claude-1h-home'),
        ANTHROPIC_BASE_URL: harness.gateway.url,
        ANTHROPIC_API_KEY: key,
        ENABLE_PROMPT_CACHING_1H: '1',
      };
      const claude = async (args: string[]) =>
        parseClaude(
          await runAgent(
            'claude',
            [...args, '--model', CLAUDE_MODEL, '--output-format', 'stream-json', '--verbose'],
            workDir,
            env,
          ),
        );
      const from = harness.logs.length;
      await claude(['-p', 'Plan the hour-long crossing.']);
      await claude(['--continue', '-p', 'And the way back.']);
      const bills = await expectChargedAsVendorBilled(await callsSince(from, '/v1/messages'));
      expect(bills).toHaveLength(2);
      expect(bills.map((bill) => [bill.write5m, bill.write1h > 0])).toEqual([
        [0, true],
        [0, true],
      ]);
      expect(bills[1]!.read / bills[1]!.total).toBeGreaterThanOrEqual(MIN_READ_SHARE);
    },
    AGENT_TEST_TIMEOUT_MS,
  );

  it(
    'reads the same tokens from the cache when the same session goes straight to the simulator',
    async () => {
      expect(throughGateway, 'the session through the gateway ran').toBeDefined();
      const simulator = await startStandaloneSimulator();
      try {
        const direct = await claudeSession(`${simulator.url}/anthropic`, 'sk-direct', (run) => run());
        // Per turn, per request: the prompt's tokens and those read from the cache, as Claude Code was told them.
        const reads = (turns: ClaudeTurn[]) =>
          turns.map((turn) =>
            turn.usages.map((usage) => {
              const side = promptSide(usage);
              const prompt = Number(side.input_tokens) + Number(side.cache_read_input_tokens);
              return { prompt: prompt + Number(side.cache_creation_input_tokens), read: side.cache_read_input_tokens };
            }),
          );
        expect(reads(direct)).toEqual(reads(throughGateway));
        for (const turn of direct.slice(1))
          for (const usage of turn.usages) expect(readShare(usage)).toBeGreaterThanOrEqual(MIN_READ_SHARE);
      } finally {
        await stopProcess(simulator.process);
      }
    },
    AGENT_TEST_TIMEOUT_MS,
  );
});

/** `tollgate simulator` as its own process on a free port. */
async function startStandaloneSimulator(): Promise<{ url: string; process: ChildProcess }> {
  const child = spawn(process.execPath, [BUILT_CLI, 'simulator', '--port', '0'], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  return await new Promise((resolve, reject) => {
    child.stdout!.setEncoding('utf8');
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => (output += chunk));
    child.stdout!.on('data', (chunk: string) => {
      output += chunk;
      const url = /Simulator listening on (http:\/\/[\d.:]+)/.exec(output)?.[1];
      if (url !== undefined) resolve({ url, process: child });
    });
    child.once('exit', (code) => reject(new Error(`the simulator exited (${code}) before listening:\n${output}`)));
  });
}

// ---------------------------------------------------------------------------------------------------- Codex CLI

interface CodexEvent {
  type: string;
  thread_id?: string;
  item?: { type: string; command?: string; exit_code?: number | null; text?: string };
  usage?: { input_tokens: number; cached_input_tokens?: number; output_tokens: number };
}

describe.each(['alpha-sonnet-5', 'beta-5.4'])('Codex CLI on %s', (model) => {
  it(
    'reads from the cache from its second request on, and is charged for it at cache prices',
    async () => {
      const codexHome = freshHome('codex-home');
      writeCodexConfig(codexHome, harness.gateway.url);
      const env = { HOME: join(codexHome, 'home'), CODEX_HOME: codexHome, TOLLGATE_API_KEY: key };
      const codex = async (args: string[]) => {
        const run = await runAgent('codex', args, workDir, env);
        expect(run.code, run.stderr).toBe(0);
        const events = run.stdout
          .split('\n')
          .filter((line) => line.trim().startsWith('{'))
          .map((line) => JSON.parse(line) as CodexEvent);
        expect(events.some((event) => event.type === 'turn.failed' || event.type === 'error')).toBe(false);
        return events;
      };
      const from = harness.logs.length;
      // Turn 1: a round of its shell tool (two requests); turn 2: the same session resumed (one more).
      const args = encodeURIComponent(JSON.stringify({ cmd: 'cat notes.txt' }));
      const first = await codex([
        'exec',
        '--json',
        '--skip-git-repo-check',
        '-m',
        model,
        `Show me my notes. [[sim tool=exec_command args=${args}]]`,
      ]);
      const command = first.find(
        (event) => event.type === 'item.completed' && event.item?.type === 'command_execution',
      );
      expect(command?.item?.exit_code).toBe(0);
      const second = await codex([
        'exec',
        'resume',
        '--last',
        '--json',
        '--skip-git-repo-check',
        '-m',
        model,
        'Thanks. Say it once more in one line.',
      ]);
      const requestIds = await callsSince(from, '/v1/responses');
      expect(requestIds.length).toBeGreaterThanOrEqual(3);
      const bills = await expectChargedAsVendorBilled(requestIds);
      for (const bill of bills.slice(1)) expect(bill.read, describeBills(bills)).toBeGreaterThan(0);
      // Codex counts the cached tokens it was told (Responses `input_tokens_details.cached_tokens`): the first
      // turn's, then the whole session's once resumed.
      const cachedSeen = [first, second].map(
        (events) => events.find((event) => event.type === 'turn.completed')?.usage?.cached_input_tokens ?? 0,
      );
      const reads = bills.map((bill) => bill.read);
      expect(cachedSeen).toEqual([sum(reads.slice(0, -1)), sum(reads)]);
    },
    AGENT_TEST_TIMEOUT_MS,
  );
});

// ---------------------------------------------------------------------------------------------------- Gemini CLI

interface GeminiLine {
  type: string;
  tool_name?: string;
  status?: string;
  stats?: { input_tokens?: number; cached?: number };
}

describe('Gemini CLI on gamma-2.5-pro', () => {
  const model = 'gamma-2.5-pro';
  it(
    'reads from the cache from its second request on, and is charged for it at cache prices',
    async () => {
      const home = freshHome('gemini-home');
      writeGeminiSettings(home);
      const env = {
        HOME: home,
        GOOGLE_GEMINI_BASE_URL: harness.gateway.url,
        GEMINI_API_KEY: key,
        GEMINI_CLI_TRUST_WORKSPACE: 'true',
      };
      const gemini = async (args: string[]) => {
        const run = await runAgent('gemini', [...args, '-m', model, '--output-format', 'stream-json'], workDir, env);
        expect(run.code, run.stderr).toBe(0);
        const lines = run.stdout
          .split('\n')
          .filter((line) => line.trim().startsWith('{'))
          .map((line) => JSON.parse(line) as GeminiLine);
        expect(lines.at(-1)).toMatchObject({ type: 'result', status: 'success' });
        return lines;
      };
      const from = harness.logs.length;
      // Turn 1 a plain prompt; turn 2 the session resumed, with a round of its read_file tool (two requests).
      // (0.61 resumes a session that holds a tool round trip with its functionResponse doubled, which the
      // vendor and the gateway refuse: so the round trip comes last.)
      const first = await gemini(['-p', 'I am planning a trip over the toll bridge. Keep your answers short.']);
      const readNotes = `[[sim tool=read_file args=${encodeURIComponent(JSON.stringify({ file_path: notesFile }))}]]`;
      const second = await gemini([
        '--resume',
        'latest',
        '-p',
        `Read my notes file and tell me the toll. ${readNotes}`,
      ]);
      expect(second.filter((line) => line.type === 'tool_use').map((line) => line.tool_name)).toEqual(['read_file']);
      const bills = await expectChargedAsVendorBilled(
        await callsSince(from, `/v1beta/models/${model}:streamGenerateContent`),
      );
      expect(bills.length).toBeGreaterThanOrEqual(3);
      for (const bill of bills.slice(1)) expect(bill.read, describeBills(bills)).toBeGreaterThan(0);
      // The CLI's own totals count the cached tokens it was told of (`cachedContentTokenCount`).
      const cachedSeen = [first, second].map((lines) => lines.at(-1)?.stats?.cached ?? 0);
      expect(cachedSeen).toEqual([bills[0]!.read, bills.slice(1).reduce((sum, bill) => sum + bill.read, 0)]);
    },
    AGENT_TEST_TIMEOUT_MS,
  );
});

function sum(values: number[]): number {
  return values.reduce((total, value) => total + value, 0);
}

/** `total/read` per request, for a failure message. */
function describeBills(bills: ReadonlyArray<{ total: number; read: number }>): string {
  return bills.map((bill) => `${bill.total}/${bill.read}`).join(', ');
}
