/**
 * What the agent-CLI suites (Claude Code, Codex, Gemini CLI, opencode, Qwen Code, Cline) share: run the real CLI with
 * only its user's configuration, read the gateway's request log to check every call the CLI made, and read what the
 * gateway billed.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { agentBin, type AgentName } from './agents-package.js';
import { startTestGateway, type TestGateway } from './test-gateway.js';

/** Generous: a loaded 2-core machine runs several suites at once; these bound a hang, they time nothing. */
export const AGENT_RUN_TIMEOUT_MS = 240_000;
export const AGENT_TEST_TIMEOUT_MS = 300_000;

/**
 * How soon a refused run must end: far below what a retry loop with backoff takes, above a CLI start on a loaded
 * 2-core machine. That no call is retried is checked on the gateway's log.
 */
export const REFUSAL_FAILS_FAST_MS = 20_000;

/** What a suite that also checks refusals runs its agent against, and where. */
export interface AgentGateways {
  /** A demo-mode gateway: new accounts have the day's free tokens. */
  harness: TestGateway;
  /** A demo-mode gateway with no free tokens: a new account's $0 balance covers nothing. */
  unfunded: TestGateway;
  /** A temporary directory for the suite's HOMEs, removed on close. */
  root: string;
  /** The agents' working directory, inside `root`. */
  workDir: string;
  close(): Promise<void>;
}

export async function startAgentGateways(name: string): Promise<AgentGateways> {
  const [harness, unfunded] = await Promise.all([
    startTestGateway({ demo: true }),
    startTestGateway({ demo: true, env: { FREE_TOKENS_PER_DAY: '0' } }),
  ]);
  const root = mkdtempSync(join(tmpdir(), `tollgate-${name}-`));
  const workDir = join(root, 'work');
  mkdirSync(workDir);
  return {
    harness,
    unfunded,
    root,
    workDir,
    async close() {
      await Promise.all([harness.close(), unfunded.close()]);
      rmSync(root, { recursive: true, force: true });
    },
  };
}

export interface AgentRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs an agent CLI in `cwd` with `env` and a plain PATH (unless `env` has its own) as its whole environment (nothing
 * of this process's configuration leaks in), stdin closed. Resolves with its exit code and output, never rejects.
 */
export function runAgent(name: AgentName, args: string[], cwd: string, env: Record<string, string>): Promise<AgentRun> {
  const fullEnv = { PATH: '/usr/local/bin:/usr/bin:/bin', ...env };
  return new Promise((resolve) => {
    const child = execFile(
      agentBin(name),
      args,
      { cwd, env: fullEnv, timeout: AGENT_RUN_TIMEOUT_MS, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr });
      },
    );
    child.stdin?.end();
  });
}

/**
 * Exactly what a user writes to point Codex at a gateway: a custom Responses provider in `$CODEX_HOME/config.toml`
 * whose key comes from `TOLLGATE_API_KEY`, after any other top-level settings given (a model's window). Also makes
 * `home/` inside it, for the run's HOME.
 */
export function writeCodexConfig(codexHome: string, gatewayUrl: string, topLevel: readonly string[] = []): void {
  mkdirSync(join(codexHome, 'home'), { recursive: true });
  writeFileSync(
    join(codexHome, 'config.toml'),
    [
      ...topLevel,
      'model_provider = "tollgate"',
      '',
      '[model_providers.tollgate]',
      'name = "Tollgate"',
      `base_url = "${gatewayUrl}/v1"`,
      'env_key = "TOLLGATE_API_KEY"',
      'wire_api = "responses"',
      '',
    ].join('\n'),
  );
}

/** Gemini CLI's settings in `home`: sign in with an API key (GEMINI_API_KEY), as a gateway user does. */
export function writeGeminiSettings(home: string): void {
  mkdirSync(join(home, '.gemini'), { recursive: true });
  writeFileSync(
    join(home, '.gemini/settings.json'),
    JSON.stringify({ security: { auth: { selectedType: 'gemini-api-key' } } }),
  );
}

/** The JSON objects a CLI printed one per line (`--output-format stream-json`, `--json`), other lines skipped. */
export function jsonLines<T>(stdout: string): T[] {
  return stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as T);
}

export interface LoggedRequest {
  method: string;
  url: string;
  status: number;
  reqId: string;
}

/** The gateway's request log lines written since `from` (an index into `harness.logs`): every call made, with its status. */
export function requestsSince(harness: TestGateway, from: number): LoggedRequest[] {
  return harness.logs
    .slice(from)
    .flatMap((chunk) => chunk.split('\n'))
    .filter((line) => line.includes('"msg":"request"'))
    .map((line) => JSON.parse(line) as LoggedRequest);
}

/** A usage record of the gateway's `/v1/usage/requests`, the fields the agent suites compare. */
export interface UsageRecord {
  request_id: string;
  status: string;
  route: string;
  output_tokens: number;
}

/** The usage records of `key`'s account, newest first: a test that gives each run a fresh account reads its own calls. */
export async function usageRecords(harness: TestGateway, key: string): Promise<UsageRecord[]> {
  const response = await fetch(`${harness.openaiBaseUrl}/usage/requests?limit=100`, {
    headers: { authorization: `Bearer ${key}` },
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: UsageRecord[] }).data;
}

/** A fresh account's key, revoked by its owner (`DELETE /v1/keys/:id`); the log is read past the revocation. */
export async function revokedKey(harness: TestGateway): Promise<string> {
  const { key, keyId } = await harness.createAccountWithKey();
  const revoked = await fetch(`${harness.gateway.url}/v1/keys/${keyId}`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${key}` },
  });
  expect(revoked.status).toBe(200);
  await harness.flushLogs();
  return key;
}

/** Asserts the only call since `from` was `url`, refused with `status`: the CLI did not retry it. */
export async function expectRefusedOnce(
  harness: TestGateway,
  from: number,
  url: string,
  status: number,
): Promise<void> {
  await harness.flushLogs();
  expect(requestsSince(harness, from).map((call) => [call.url, call.status])).toEqual([[url, status]]);
}

/** Asserts the CLI called `url` and no call since `from` failed; returns those calls. */
export function expectAllCallsSucceeded(harness: TestGateway, from: number, url: string): LoggedRequest[] {
  const calls = requestsSince(harness, from);
  expect(calls.some((call) => call.url === url)).toBe(true);
  expect(calls.filter((call) => call.status >= 400)).toEqual([]);
  return calls;
}
