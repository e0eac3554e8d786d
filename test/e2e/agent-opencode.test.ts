/**
 * opencode (the real CLI, pinned in test/agents) against the gateway in demo mode, configured only as its users
 * configure it: an `opencode.json` in a fresh HOME's `~/.config/opencode` naming the gateway as a provider
 * (`options.baseURL`, the key as `{env:TOLLGATE_API_KEY}`), then `opencode run --format json --model
 * <provider>/<model> "…"`. Four provider setups: the one opencode's docs give for an OpenAI-compatible gateway
 * (`"npm": "@ai-sdk/openai-compatible"`: Chat Completions), and its built-in `anthropic` (Messages), `openai`
 * (Responses) and `google` (Gemini) providers with `baseURL` overridden and `small_model` set (see PROVIDERS). These
 * AI SDK providers are bundled in opencode's binary: no run installs one (each test checks that nothing was).
 *
 * Environment, each for a network call opencode would make besides the gateway's:
 * - OPENCODE_DISABLE_MODELS_FETCH: no models.dev catalogue download (opencode uses the copy built into it);
 *   `autoupdate: false` and `share: "disabled"` in the config do the same for updates and session sharing.
 * - npm_config_offline: opencode 1.18 installs `@opencode-ai/plugin` into every config directory in the background
 *   at start (with npm's Arborist, reading npm's own configuration) and waits for it before the first turn; it has no
 *   switch of its own for that (asked for in anomalyco/opencode#37888). Offline, the install fails from the empty
 *   cache without a request, which opencode logs as a warning and ignores, so no run downloads anything.
 *
 * Two scenarios: a one-shot answer (opencode's title call and the answer), and a round of opencode's own `read`
 * tool (the simulator's directive makes the model call it on a file of this test; the next turn quotes the file);
 * on one model of each family through Chat Completions, and on one model through each built-in provider. Every call
 * opencode makes must succeed, and each is one billed usage record of the test's own key. The runs are independent
 * (a fresh HOME and key each), so they run concurrently.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  AGENT_TEST_TIMEOUT_MS as TEST_TIMEOUT_MS,
  expectAllCallsSucceeded,
  runAgent,
  type AgentRun,
  usageRecords,
} from '../helpers/agent-cli.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const MODELS = ['alpha-sonnet-5', 'beta-5.4', 'gamma-2.5-pro', 'delta-v4-flash'] as const;
type Model = (typeof MODELS)[number];

/**
 * The provider setups, by their id in `opencode.json`: the gateway route each one's SDK calls, and the model a
 * built-in provider must be told to use for opencode's small tasks (the session title): by default it asks for its
 * vendor's own small model (`claude-haiku-4-5-…`, `gpt-5.4-nano`, `gemini-3.8-flash`), which is no gateway model
 * id, so the call fails with the gateway's 400 (404 on the Gemini route) naming the valid ids. A custom provider
 * uses the session's model for them.
 */
const PROVIDERS = {
  tollgate: { route: () => '/v1/chat/completions', label: '@ai-sdk/openai-compatible', smallModel: undefined },
  anthropic: { route: () => '/v1/messages', label: 'the built-in anthropic provider', smallModel: 'alpha-haiku-4-5' },
  openai: { route: () => '/v1/responses', label: 'the built-in openai provider', smallModel: 'o4-mini' },
  google: {
    route: (model: Model) => `/v1beta/models/${model}:streamGenerateContent`,
    label: 'the built-in google provider',
    smallModel: 'gamma-3.5-flash',
  },
} as const;
type ProviderId = keyof typeof PROVIDERS;

let harness: TestGateway;
let root: string;
let workDir: string;

beforeAll(async () => {
  harness = await startTestGateway({ demo: true });
  root = mkdtempSync(join(tmpdir(), 'tollgate-opencode-'));
  workDir = join(root, 'work');
  mkdirSync(workDir);
}, 60_000);

afterAll(async () => {
  await harness?.close();
  if (root !== undefined) rmSync(root, { recursive: true, force: true });
});

/** What a user writes to `~/.config/opencode/opencode.json` to reach the gateway through `provider`. */
function userConfig(provider: ProviderId): string {
  // The AI SDK's Google provider appends `/models/…` to its base URL, the others `/chat/completions`, `/messages`….
  const options = {
    baseURL: `${harness.gateway.url}/${provider === 'google' ? 'v1beta' : 'v1'}`,
    apiKey: '{env:TOLLGATE_API_KEY}',
  };
  const { smallModel } = PROVIDERS[provider];
  // Ids opencode's built-in catalogue does not know are declared, as for any model it does not list.
  const models = Object.fromEntries(
    [...MODELS, ...(smallModel === undefined ? [] : [smallModel])].map((model) => [model, { name: model }]),
  );
  const setup =
    provider === 'tollgate'
      ? { npm: '@ai-sdk/openai-compatible', name: 'Tollgate', options, models }
      : { options, models };
  const config = {
    $schema: 'https://opencode.ai/config.json',
    autoupdate: false,
    share: 'disabled',
    ...(smallModel === undefined ? {} : { small_model: `${provider}/${smallModel}` }),
    provider: { [provider]: setup },
  };
  return JSON.stringify(config, null, 2);
}

/** A first-time user of `provider`: a fresh HOME holding only the config, and an API key of a fresh account. */
async function freshUser(provider: ProviderId): Promise<{ home: string; key: string }> {
  const home = mkdtempSync(join(root, 'home-'));
  mkdirSync(join(home, '.config/opencode'), { recursive: true });
  writeFileSync(join(home, '.config/opencode/opencode.json'), userConfig(provider));
  const { key } = await harness.createAccountWithKey();
  return { home, key };
}

/**
 * Runs `opencode run --format json` in the shared work directory with only its user's configuration, and checks it
 * installed no package: neither a provider SDK (into `~/.cache/opencode/packages`) nor the plugin package.
 */
async function opencode(user: { home: string; key: string }, args: string[]): Promise<AgentRun> {
  const env = {
    HOME: user.home,
    TOLLGATE_API_KEY: user.key,
    OPENCODE_DISABLE_MODELS_FETCH: '1',
    npm_config_offline: 'true',
  };
  const run = await runAgent('opencode', ['run', '--format', 'json', ...args], workDir, env);
  expect(existsSync(join(user.home, '.cache/opencode/packages'))).toBe(false);
  expect(existsSync(join(user.home, '.config/opencode/node_modules'))).toBe(false);
  return run;
}

/** The events `--format json` prints, one JSON object a line. */
interface OpencodeEvent {
  type: string;
  part?: {
    type?: string;
    text?: string;
    tool?: string;
    reason?: string;
    state?: { status?: string; input?: Record<string, unknown>; output?: string };
    tokens?: { input?: number; output?: number };
  };
}

function events(stdout: string): OpencodeEvent[] {
  return stdout
    .split('\n')
    .filter((line) => line.trim().startsWith('{'))
    .map((line) => JSON.parse(line) as OpencodeEvent);
}

function answerText(all: OpencodeEvent[]): string {
  return all
    .filter((event) => event.type === 'text')
    .map((event) => event.part?.text ?? '')
    .join('');
}

/** The run's model steps ended cleanly and counted tokens from the stream's usage (the prompt's tokens, not 0). */
function expectCleanSteps(all: OpencodeEvent[]): void {
  expect(all.filter((event) => event.type === 'error')).toEqual([]);
  const steps = all.filter((event) => event.type === 'step_finish');
  expect(steps.length).toBeGreaterThan(0);
  expect(steps.at(-1)?.part?.reason).toBe('stop');
  for (const step of steps) {
    expect(step.part?.tokens?.input ?? 0).toBeGreaterThan(0);
    expect(step.part?.tokens?.output ?? 0).toBeGreaterThan(0);
  }
}

/**
 * Every call since `from` succeeded (runs overlap, so this covers the other tests' calls too); returns how many
 * calls the gateway billed to `key` (this test's own).
 */
async function expectBilledCalls(key: string, from: number, route: string): Promise<number> {
  expectAllCallsSucceeded(harness, from, route);
  return new Set((await usageRecords(harness, key)).map((record) => record.request_id)).size;
}

/** A one-shot prompt: opencode's title call (the small model) and the answer, echoing the prompt. */
async function oneShot(provider: ProviderId, model: Model): Promise<void> {
  const user = await freshUser(provider);
  const from = harness.logs.length;
  const run = await opencode(user, ['--model', `${provider}/${model}`, 'Say hi to the toll gate.']);
  expect(run.code, run.stderr).toBe(0);
  const all = events(run.stdout);
  // The simulator's reply starts by echoing the prompt (opencode quotes a message that has spaces).
  expect(answerText(all)).toMatch(/^You said: "+Say hi to the toll gate\./);
  expectCleanSteps(all);
  // The session's title and the answer.
  expect(await expectBilledCalls(user.key, from, PROVIDERS[provider].route(model))).toBe(2);
}

/** The tool round: opencode's `read` on a file of this test, then an answer quoting what it read. */
async function readToolRound(provider: ProviderId, model: Model): Promise<void> {
  const user = await freshUser(provider);
  const secret = `the toll is ${model.length * 7} copper coins at ${provider}/${model}`;
  const file = join(workDir, `notes-${provider}-${model}.txt`);
  writeFileSync(file, `${secret}\n`);
  const directive = `[[sim tool=read args=${encodeURIComponent(JSON.stringify({ filePath: file }))}]]`;
  const from = harness.logs.length;
  // `--title` names the session after the prompt: without it opencode asks the model for a title in a call that
  // offers no tools, which the directive in the prompt would make the simulator refuse.
  const run = await opencode(user, [
    '--title',
    '--model',
    `${provider}/${model}`,
    `Read my notes file and tell me the toll. ${directive}`,
  ]);
  expect(run.code, run.stderr).toBe(0);
  const all = events(run.stdout);
  const tools = all.filter((event) => event.type === 'tool_use');
  expect(tools.map((event) => [event.part?.tool, event.part?.state?.status])).toEqual([['read', 'completed']]);
  expect(tools[0]?.part?.state?.output).toContain(secret);
  // The second turn quotes the tool's output: opencode sent the result back and the model read it.
  expect(answerText(all)).toContain(secret);
  expectCleanSteps(all);
  // The call that asked for the tool and the one that answered with its result.
  expect(await expectBilledCalls(user.key, from, PROVIDERS[provider].route(model))).toBe(2);
}

/**
 * Both scenarios on every family through Chat Completions; through each built-in provider on one model, of another
 * family than the provider's own (Claude Code, Codex and Gemini CLI drive their routes on every family
 * already, and an opencode run costs ~8 s of CPU: the suite's wall time is its number of runs).
 */
const RUNS: ReadonlyArray<readonly [ProviderId, Model]> = [
  ...MODELS.map((model) => ['tollgate', model] as const),
  ['anthropic', 'gamma-2.5-pro'],
  ['openai', 'delta-v4-flash'],
  ['google', 'alpha-sonnet-5'],
];

for (const [provider, model] of RUNS) {
  const through = `on ${model} through ${PROVIDERS[provider].label}`;
  it.concurrent(`answers a one-shot prompt ${through}`, () => oneShot(provider, model), TEST_TIMEOUT_MS);
  it.concurrent(
    `reads a file with its read tool ${through} and quotes it`,
    () => readToolRound(provider, model),
    TEST_TIMEOUT_MS,
  );
}
