/**
 * Cline's CLI (the real one, pinned in test/agents) against the gateway in demo mode, configured only as its users
 * configure it: `cline auth -p openai -k <key> -m <model> -b <gateway>/v1` (its OpenAI-compatible provider; the CLI
 * takes a base URL for no other provider) in a fresh HOME, then `cline --json "<prompt>"`, which runs the task
 * headless with its tools approved. Its environment, each for something Cline would do besides calling the gateway:
 * - `~/.cline/data/settings/global-settings.json` with `telemetryOptOut` and `autoUpdateEnabled: false`, as a user
 *   opting out writes it: no telemetry, no update check.
 * - CLINE_SESSION_BACKEND_MODE=local: the task runs in the CLI's own process; by default Cline also starts its
 *   background hub daemon, which outlives the run.
 * - E2E_TEST=true: Cline fetches feature flags from its own server on every start, with no user setting to stop
 *   it; its test switch replaces that with its no-op provider, and does nothing else.
 *
 * A one-shot answer, and on one model of each family a round of Cline's own `read_files` tool (the simulator's
 * directive makes the model call it on a file of this test; the next turn quotes the file). Every call must
 * succeed, and the turns Cline ran are the calls the gateway billed to the run's fresh account, with the output
 * tokens Cline counted. Then the refusals no retry can fix, a revoked key (401) and an exhausted balance (403): one
 * call each, its reason shown to the user.
 */
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
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
import type { TestGateway } from '../helpers/test-gateway.js';

const MODELS = ['alpha-sonnet-5', 'beta-5.4', 'gamma-2.5-pro', 'delta-v4-flash'] as const;
const ROUTE = '/v1/chat/completions';

let gateways: AgentGateways;
let harness: TestGateway;
let unfunded: TestGateway;
let root: string;
let workDir: string;

beforeAll(async () => {
  gateways = await startAgentGateways('cline');
  ({ harness, unfunded, root, workDir } = gateways);
}, 60_000);

afterAll(() => gateways?.close());

/**
 * A first-time user who ran `cline auth` for `gateway` with `key` and `model`; returns the environment of their
 * later runs.
 */
async function signedInUser(
  key: string,
  model: string,
  gateway: TestGateway = harness,
): Promise<Record<string, string>> {
  const home = mkdtempSync(join(root, 'home-'));
  mkdirSync(join(home, '.cline/data/settings'), { recursive: true });
  writeFileSync(
    join(home, '.cline/data/settings/global-settings.json'),
    JSON.stringify({ telemetryOptOut: true, autoUpdateEnabled: false }),
  );
  const env = { HOME: home, CLINE_SESSION_BACKEND_MODE: 'local', E2E_TEST: 'true' };
  const auth = await runAgent(
    'cline',
    ['auth', '-p', 'openai', '-k', key, '-m', model, '-b', `${gateway.gateway.url}/v1`],
    workDir,
    env,
  );
  expect(auth.code, auth.stdout + auth.stderr).toBe(0);
  expect(auth.stdout).toContain(`openai-compatible`);
  return env;
}

/** Runs `cline --json <prompt>` in the work directory; checks it left no hub daemon's discovery record behind. */
async function cline(env: Record<string, string>, prompt: string): Promise<AgentRun & { elapsedMs: number }> {
  const started = performance.now();
  const run = await runAgent('cline', ['--json', prompt], workDir, env);
  const elapsedMs = performance.now() - started;
  expect(existsSync(join(env.HOME!, '.cline/data/locks/hub/production.json'))).toBe(false);
  return { ...run, elapsedMs };
}

/** The lines `--json` prints, one JSON object a line. */
interface ClineLine {
  type: string;
  message?: string;
  finishReason?: string;
  iterations?: number;
  text?: string;
  usage?: { inputTokens: number; outputTokens: number };
  event?: {
    type: string;
    contentType?: string;
    toolName?: string;
    output?: Array<{ query: string; result: string; success: boolean }>;
  };
}

function lines(stdout: string): ClineLine[] {
  return stdout
    .split('\n')
    .filter((line) => line.trim().startsWith('{'))
    .map((line) => JSON.parse(line) as ClineLine);
}

/**
 * The task completed, every call since `from` succeeded, and the gateway billed one call per turn Cline ran, with
 * the output tokens Cline counted; returns the run's result line.
 */
async function expectCompletedBilled(key: string, from: number, run: AgentRun): Promise<ClineLine> {
  expect(run.code, run.stderr + run.stdout).toBe(0);
  const all = lines(run.stdout);
  expect(all.filter((line) => line.type === 'error')).toEqual([]);
  const result = all.find((line) => line.type === 'run_result')!;
  expect(result).toMatchObject({ finishReason: 'completed' });
  await harness.flushLogs();
  expectAllCallsSucceeded(harness, from, ROUTE);
  const billed = await usageRecords(harness, key);
  expect(billed.map((record) => [record.route, record.status])).toEqual(
    Array.from({ length: result.iterations ?? 0 }, () => [ROUTE, 'ok']),
  );
  expect(billed.reduce((sum, record) => sum + record.output_tokens, 0)).toBe(result.usage?.outputTokens);
  return result;
}

async function oneShot(model: string): Promise<void> {
  const { key } = await harness.createAccountWithKey();
  const env = await signedInUser(key, model);
  const from = harness.logs.length;
  const run = await cline(env, 'Say hi to the toll gate.');
  const result = await expectCompletedBilled(key, from, run);
  // The simulator's reply starts by echoing the prompt.
  expect(result.text).toMatch(/^You said: "Say hi to the toll gate\."/);
  expect(result.iterations).toBe(1);
}

async function readToolRound(model: string): Promise<void> {
  const { key } = await harness.createAccountWithKey();
  const env = await signedInUser(key, model);
  const secret = `the toll is ${model.length * 7} copper coins at ${model}`;
  const file = join(workDir, `notes-${model}.txt`);
  writeFileSync(file, `${secret}\n`);
  const directive = `[[sim tool=read_files args=${encodeURIComponent(JSON.stringify({ files: [{ path: file }] }))}]]`;
  const from = harness.logs.length;
  const run = await cline(env, `Read my notes file and tell me the toll. ${directive}`);
  const result = await expectCompletedBilled(key, from, run);
  const tools = lines(run.stdout).filter(
    (line) => line.event?.type === 'content_end' && line.event.contentType === 'tool',
  );
  expect(tools.map((line) => [line.event?.toolName, line.event?.output?.[0]?.success])).toEqual([['read_files', true]]);
  expect(tools[0]?.event?.output?.[0]?.result).toContain(secret);
  // The second turn quotes the tool's output: Cline sent the result back and the model read it.
  expect(result.text).toContain(secret);
  expect(result.iterations).toBe(2);
}

// Every run has its own HOME and account, so they all run at once; the refusal comes after them, since it fails a
// call that the successful runs' checks would otherwise see. A Cline run costs ~3 s of CPU (its setup and its task),
// so the one-shot runs on one family: the tool round's first turn is a one-shot turn on every family.
it.concurrent(
  'answers a one-shot prompt on beta-5.4, billed as it counted',
  () => oneShot('beta-5.4'),
  TEST_TIMEOUT_MS,
);
for (const model of MODELS) {
  it.concurrent(
    `reads a file with its read_files tool on ${model} and quotes it`,
    () => readToolRound(model),
    TEST_TIMEOUT_MS,
  );
}

describe('Cline refused by the gateway', () => {
  /**
   * Runs a task that `gateway` refuses; asserts Cline failed fast after one call, its error line (on stderr) giving
   * the gateway's `reason`.
   */
  async function expectRefusal(gateway: TestGateway, key: string, status: number, reason: RegExp): Promise<void> {
    const env = await signedInUser(key, 'beta-5.4', gateway);
    await gateway.flushLogs();
    const from = gateway.logs.length;
    const run = await cline(env, 'Say hi to the toll gate.');
    expect(run.code, run.stdout + run.stderr).not.toBe(0);
    expect(lines(run.stderr).filter((line) => line.type === 'error')).toEqual([
      expect.objectContaining({ message: expect.stringMatching(reason) }),
    ]);
    expect(run.elapsedMs, run.stdout).toBeLessThan(REFUSAL_FAILS_FAST_MS);
    await expectRefusedOnce(gateway, from, ROUTE, status);
  }

  it(
    'fails fast with the 401 text when its key is revoked',
    async () => expectRefusal(harness, await revokedKey(harness), 401, /^This API key has been revoked\.$/),
    TEST_TIMEOUT_MS,
  );

  it(
    'shows an exhausted balance as the reason, and does not retry',
    async () => {
      const { key } = await unfunded.createAccountWithKey();
      await expectRefusal(unfunded, key, 403, /^Insufficient balance: this request needs \$/);
    },
    TEST_TIMEOUT_MS,
  );
});
