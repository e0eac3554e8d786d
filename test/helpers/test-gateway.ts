/**
 * The gateway as users run it: `node dist/src/cli.js serve`, the command `npm start`, the `tollgate` bin and the
 * Docker image run, started as a process on a loopback port. The test keeps its own connection to the same
 * database (real SQLite file or PostgreSQL schema) to set up accounts and read what the gateway stored, and reads
 * every log line the process wrote.
 */
import { randomBytes } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AccountService } from '../../src/accounts/account-service.js';
import { parseUsd } from '../../src/billing/money.js';
import type { VendorName } from '../../src/canonical/request.js';
import { loadConfig, type Config } from '../../src/config/load-config.js';
import { KeyService } from '../../src/keys/key-service.js';
import { startSimulator } from '../../src/simulator/simulator-server.js';
import { openStorage } from '../../src/storage/open-storage.js';
import type { Storage } from '../../src/storage/types.js';
import { BUILT_CLI } from './cli-path.js';
import { dropPostgresSchema, POSTGRES_URL } from './storage-backends.js';

/** The running gateway process, and the test's own handles on what it stores. */
export interface GatewayUnderTest {
  /** `http://127.0.0.1:port`, from the start-up banner. */
  url: string;
  /** The configuration the process loaded: the same environment and tollgate.yaml, read by the same code. */
  config: Config;
  /** The test's own connection to the gateway's database. */
  storage: Storage;
  /** Accounts and keys over that connection, as `tollgate accounts create` / `keys create` make them. */
  accounts: AccountService;
  keys: KeyService;
  /** The in-process demo simulator's URL in demo mode, from the banner. */
  simulatorUrl: string | undefined;
  process: ChildProcess;
  /** SIGTERM, as an orchestrator stops it; resolves with the exit code once the process has exited. */
  close(): Promise<number | null>;
}

export interface TestGateway {
  gateway: GatewayUnderTest;
  simulator: Awaited<ReturnType<typeof startSimulator>> | undefined;
  /** Base URL for the OpenAI SDK (`…/v1`). */
  openaiBaseUrl: string;
  databaseUrl: string;
  /** The environment the process was started with (to start another on the same database and journal). */
  env: Record<string, string>;
  /** Every line the process wrote to stdout and stderr: the banner and its JSON log lines. */
  logs: string[];
  /**
   * Resolves once every line the process has written so far is in `logs`. A reply and the log lines written
   * before it travel on different pipes, so a test that reads the log right after a reply waits for this first.
   */
  flushLogs(): Promise<void>;
  /** Sets the process's wall clock (fake-clock gateways only); it stands still there until set again. */
  setClock(epochMs: number): void;
  /** A fresh account with one API key, on the given rate-limit tier (default: standard, 100 requests/min). */
  createAccountWithKey(email?: string, tier?: string): Promise<{ accountId: string; key: string; keyId: string }>;
  close(): Promise<void>;
}

export interface TestGatewayOptions {
  /**
   * Extra environment (e.g. to point vendors elsewhere); the defaults point every configured vendor at a simulator.
   * A DATABASE_URL here is the database of the process and of the test's own connection alike.
   */
  env?: Record<string, string>;
  /** Serve from the gateway's own demo simulator instead of a separate one. */
  demo?: boolean;
  /**
   * Start the process with its wall clock stopped at this instant (libfaketime, LD_PRELOAD): `setClock` moves it.
   * Timers run on the real monotonic clock, so only what reads the date sees the fake one.
   */
  fakeClockMs?: number;
  /** Vendors pointed at the simulator (default: all four); the others stay unconfigured. */
  vendors?: VendorName[];
  /** Store in the local PostgreSQL (a fresh schema, dropped on close) instead of SQLite. */
  postgres?: boolean;
  /** A tollgate.yaml for this gateway (tiers, model overrides). */
  yaml?: string;
}

const ALL_VENDORS: VendorName[] = ['openai', 'anthropic', 'gemini', 'deepseek'];
/** Debian's libfaketime (package `faketime`, which .ci/run installs). */
const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';

let accountCounter = 0;

/** The shipped gateway on a loopback port, SQLite in a temp dir, a separate simulator as every vendor's upstream. */
export async function startTestGateway(options: TestGatewayOptions = {}): Promise<TestGateway> {
  const directory = mkdtempSync(join(tmpdir(), 'tollgate-test-'));
  const postgresSchema = options.postgres ? `tollgate_e2e_${randomBytes(6).toString('hex')}` : undefined;
  const databaseUrl =
    options.env?.DATABASE_URL ??
    (postgresSchema === undefined ? `sqlite:${join(directory, 'tollgate.db')}` : schemaUrl(postgresSchema));
  const simulator = options.demo ? undefined : await startSimulator({ port: 0, host: '127.0.0.1' });
  const env: Record<string, string> = {
    PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_URL: databaseUrl,
    // Its own, never the working directory's ./data (a PostgreSQL gateway's default).
    SETTLEMENT_JOURNAL_DIR: join(directory, 'settlement-journal'),
    LOG_LEVEL: 'trace',
    // Suites register many accounts from 127.0.0.1; the registration limit has its own test (dashboard-security).
    REGISTRATIONS_PER_IP: '0',
    ...Object.fromEntries(
      simulator === undefined
        ? []
        : (options.vendors ?? ALL_VENDORS).map((vendor) => [
            `${vendor.toUpperCase()}_BASE_URL`,
            simulator.baseUrls[vendor],
          ]),
    ),
    ...(options.yaml === undefined ? {} : { TOLLGATE_CONFIG: join(directory, 'tollgate.yaml') }),
    ...options.env,
  };
  if (options.yaml !== undefined) writeFileSync(join(directory, 'tollgate.yaml'), options.yaml);
  const clockFile = join(directory, 'faketime');
  const setClock = (epochMs: number) => {
    if (options.fakeClockMs === undefined) throw new Error('setClock needs a gateway started with fakeClockMs.');
    // libfaketime's "stopped at" form, read again at every clock read (FAKETIME_NO_CACHE).
    writeFileSync(clockFile, `${new Date(epochMs).toISOString().replace('T', ' ').replace('Z', '')}\n`);
  };
  const clockEnv: Record<string, string> = {};
  if (options.fakeClockMs !== undefined) {
    if (!existsSync(LIBFAKETIME))
      throw new Error(`${LIBFAKETIME} is missing: apt-get install faketime (.ci/run does).`);
    setClock(options.fakeClockMs);
    Object.assign(clockEnv, {
      LD_PRELOAD: LIBFAKETIME,
      FAKETIME_TIMESTAMP_FILE: clockFile,
      FAKETIME_NO_CACHE: '1',
      FAKETIME_DONT_FAKE_MONOTONIC: '1',
      TZ: 'UTC',
    });
  }
  const config = loadConfig(env, directory);
  // Opened first: for PostgreSQL this creates the schema the process's search_path names (it migrates into it).
  const storage = await openStorage(databaseUrl, postgresSchema === undefined ? {} : { postgresSchema });
  const logs: string[] = [];
  let started: { child: ChildProcess; url: string; simulatorUrl: string | undefined };
  try {
    started = await spawnGateway({ ...env, ...clockEnv }, logs);
  } catch (error) {
    await storage.close();
    await simulator?.close();
    rmSync(directory, { recursive: true, force: true });
    if (postgresSchema !== undefined) await dropPostgresSchema(postgresSchema);
    throw error;
  }
  const testNow = options.fakeClockMs === undefined ? Date.now : () => currentFakeClock;
  let currentFakeClock = options.fakeClockMs ?? 0;
  const accounts = new AccountService(storage.accounts, testNow);
  const keys = new KeyService(storage.apiKeys, testNow);
  let exited: Promise<number | null> | undefined;
  const gateway: GatewayUnderTest = {
    url: started.url,
    config,
    storage,
    accounts,
    keys,
    simulatorUrl: started.simulatorUrl,
    process: started.child,
    close() {
      exited ??= stopProcess(started.child);
      return exited;
    },
  };
  return {
    gateway,
    simulator,
    openaiBaseUrl: `${started.url}/v1`,
    databaseUrl,
    env: { ...env, ...clockEnv },
    logs,
    flushLogs: () => flushLogs(started.url, logs),
    setClock(epochMs) {
      setClock(epochMs);
      currentFakeClock = epochMs;
    },
    async createAccountWithKey(email = `user${++accountCounter}-${Date.now()}@example.com`, tier?: string) {
      const account = await accounts.create({ email, password: 'correct horse battery staple' });
      if (tier !== undefined) await accounts.setTier(email, tier, config.tiers);
      const created = await keys.create(account.id, account.id, { name: 'test' });
      return { accountId: account.id, key: created.secret, keyId: created.record.id };
    },
    async close() {
      await gateway.close();
      await storage.close();
      await simulator?.close();
      rmSync(directory, { recursive: true, force: true });
      if (postgresSchema !== undefined) await dropPostgresSchema(postgresSchema);
    },
  };
}

/** A fresh account with one key, on `tier` (enterprise: no rate limit in a test's way), topped up with `usd`. */
export async function fundedAccountWithKey(harness: TestGateway, usd: string, tier = 'enterprise') {
  const created = await harness.createAccountWithKey(undefined, tier);
  await harness.gateway.storage.billing.credit({
    accountId: created.accountId,
    kind: 'topup',
    amountNano: parseUsd(usd),
    idempotencyKey: `t-${created.accountId}`,
    note: null,
    at: Date.now(),
  });
  return created;
}

/** The local PostgreSQL with every table in `schema`, carried in the URL as a deployment sharing a database sets it. */
export function schemaUrl(schema: string): string {
  return `${POSTGRES_URL}?options=${encodeURIComponent(`-c search_path=${schema}`)}`;
}

/**
 * `node dist/src/cli.js serve` (under `node`, this Node by default) with exactly `env` (plus PATH): resolves once
 * the banner names its address. Every output line lands in `logs`, and the pipes are drained for the life of the
 * process.
 */
export async function spawnGateway(
  env: Record<string, string>,
  logs: string[] = [],
  node: string = process.execPath,
): Promise<{ child: ChildProcess; url: string; simulatorUrl: string | undefined }> {
  const child = spawn(node, [BUILT_CLI, 'serve'], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const collect = (stream: NodeJS.ReadableStream) => {
    let partial = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop()!;
      logs.push(...lines.map((line) => `${line}\n`));
    });
    stream.on('end', () => {
      if (partial !== '') logs.push(partial);
    });
  };
  collect(child.stdout!);
  collect(child.stderr!);
  return await new Promise((resolve, reject) => {
    const check = () => {
      const text = logs.join('');
      const url = /Tollgate listening on (https?:\/\/[\w.:[\]]+)/.exec(text)?.[1];
      if (url === undefined) return;
      child.stdout!.off('data', check);
      child.off('exit', failed);
      resolve({ child, url, simulatorUrl: /built-in simulator \((http:\/\/[\d.:]+)\)/.exec(text)?.[1] });
    };
    const failed = (code: number | null, signal: NodeJS.Signals | null) =>
      reject(new Error(`The gateway exited (${signal ?? code}) before listening:\n${logs.join('').slice(-4_000)}`));
    child.stdout!.on('data', check);
    child.once('exit', failed);
  });
}

/**
 * One more request, then its log line: the process writes its lines in order on one pipe, so once that line is
 * here every earlier one is too. Needs a log level that writes request lines (startTestGateway's trace does).
 * Only the probe's request line is left out; any other line the probe caused would stay.
 */
async function flushLogs(url: string, logs: string[]): Promise<void> {
  const response = await fetch(`${url}/healthz`);
  await response.arrayBuffer();
  const id = response.headers.get('x-request-id');
  if (id === null) throw new Error('flushLogs: /healthz answered without an x-request-id.');
  const deadline = Date.now() + 10_000;
  for (;;) {
    const index = logs.findIndex((line) => line.includes(id));
    if (index !== -1) {
      // The probe's own line goes: a test counting the requests it made sees only those.
      logs.splice(index, 1);
      return;
    }
    if (Date.now() > deadline)
      throw new Error(`flushLogs: no log line of request ${id} within 10 s (is LOG_LEVEL below info?).`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** SIGTERM and wait for the exit (SIGKILL after 30 s: a test must never leave a gateway behind). */
export async function stopProcess(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const code = await exit;
  clearTimeout(timer);
  return code;
}
