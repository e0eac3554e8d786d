/**
 * The bench's child processes: the built CLI for setup, the mock upstream and the gateway as separate processes
 * (so their CPU and memory can be read from /proc on their own), readiness waits, and /proc readings.
 *
 * Children are started with `node` directly, never through npm or a shell, so the pid we hold is the pid
 * of the process we measure and signal.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { GLIBC_MALLOC_ENV } from '../src/glibc-malloc.js';

/** The built CLI as it ships (tsc's output), found relative to this file so the bench works from any working directory. */
export const CLI_PATH = fileURLToPath(new URL('../src/cli.js', import.meta.url));

/** The bench's mock upstream, compiled next to this file. */
export const MOCK_PATH = fileURLToPath(new URL('./mock-upstream.js', import.meta.url));

/** The floor proxy (bare Node pass-through), compiled next to this file. */
export const FLOOR_PATH = fileURLToPath(new URL('./floor-proxy.js', import.meta.url));

/** How many lines of a child's output are kept for error messages and the end-of-run report. */
const OUTPUT_TAIL_LINES = 40;

/**
 * Settings that would let the caller's environment change what is measured (a tollgate.yaml elsewhere,
 * real vendor keys, a Redis limiter, an OpenTelemetry collector): dropped from every child's environment.
 */
const INHERITED_SETTING_PATTERN =
  /^(PORT|HOST|DATABASE_URL|REDIS_URL|LOG_LEVEL|BODY_LIMIT_BYTES|TOLLGATE_.*|OTEL_.*|(OPENAI|ANTHROPIC|GEMINI|DEEPSEEK)_.*)$/;

export function childEnvironment(settings: Readonly<Record<string, string>>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!INHERITED_SETTING_PATTERN.test(name)) env[name] = value;
  }
  return { ...env, ...settings };
}

/** Runs one CLI command with `--json` and returns its parsed output; a CLI error becomes an exception. */
export async function runCliJson(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<Record<string, unknown>> {
  const { stdout, stderr } = await new Promise<{ stdout: string; stderr: string }>((resolve, reject) => {
    execFile(process.execPath, [CLI_PATH, ...args, '--json'], { env, cwd, timeout: 60_000 }, (error, out, err) => {
      // The CLI reports its own failures as {"error": ...} on stdout with exit code 1: prefer that message.
      if (error && out.trim() === '') reject(new Error(`tollgate ${args.join(' ')} failed: ${error.message}\n${err}`));
      else resolve({ stdout: out, stderr: err });
    });
  });
  let parsed: unknown;
  try {
    parsed = JSON.parse(stdout.trim().split('\n').at(-1) ?? '');
  } catch {
    throw new Error(`tollgate ${args.join(' ')} printed no JSON:\n${stdout}${stderr}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Error(`tollgate ${args.join(' ')} printed ${stdout.trim()}`);
  }
  const record = parsed as Record<string, unknown>;
  if (record.error !== undefined) throw new Error(`tollgate ${args.join(' ')}: ${String(record.error)}`);
  return record;
}

/** A free TCP port on loopback. The port is released before use, so another process could take it first; rare enough here. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('Could not pick a free port.');
  return address.port;
}

/** A started child with the tail of its output, kept for diagnostics. */
export class ManagedProcess {
  readonly pid: number;
  private readonly tail: string[] = [];
  private linesAfterMark = 0;
  private exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  private readonly exited: Promise<void>;
  private readonly stdoutListeners = new Set<(line: string) => void>();

  constructor(
    readonly name: string,
    private readonly child: ChildProcess,
  ) {
    if (child.pid === undefined) throw new Error(`Could not start the ${name}.`);
    this.pid = child.pid;
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.exit = { code, signal };
        resolve();
      });
    });
    // Both pipes must be drained, or a chatty child blocks once the pipe buffer is full. One reader per pipe:
    // a second readline on the same stream would pause it when closed.
    if (child.stdout !== null) {
      createInterface({ input: child.stdout }).on('line', (line) => {
        this.keep(line);
        for (const listener of [...this.stdoutListeners]) listener(line);
      });
    }
    if (child.stderr !== null) createInterface({ input: child.stderr }).on('line', (line) => this.keep(line));
  }

  get running(): boolean {
    return this.exit === undefined;
  }

  /** Why the child is gone, for error messages ("" while it runs). */
  exitDescription(): string {
    if (this.exit === undefined) return '';
    return this.exit.signal === null
      ? `exited with code ${String(this.exit.code)}`
      : `was killed by ${this.exit.signal}`;
  }

  /** The last lines the child wrote (stdout and stderr interleaved). */
  outputTail(): string[] {
    return [...this.tail];
  }

  /** Starts counting output lines from now on: after start-up, any output at LOG_LEVEL=warn is worth a look. */
  markOutput(): void {
    this.linesAfterMark = 0;
  }

  linesSinceMark(): number {
    return this.linesAfterMark;
  }

  /** Resolves with the next stdout line, or rejects when the child exits or `timeoutMs` passes first. */
  async nextStdoutLine(timeoutMs: number): Promise<string> {
    if (!this.running) throw new Error(`The ${this.name} ${this.exitDescription()}:\n${this.tail.join('\n')}`);
    return await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => finish(new Error(`The ${this.name} printed nothing within ${timeoutMs} ms.`)),
        timeoutMs,
      );
      const onExit = () =>
        finish(new Error(`The ${this.name} ${this.exitDescription()} before it was ready:\n${this.tail.join('\n')}`));
      const onLine = (line: string) => finish(line);
      const finish = (result: Error | string) => {
        clearTimeout(timer);
        this.stdoutListeners.delete(onLine);
        this.child.off('exit', onExit);
        if (typeof result === 'string') resolve(result);
        else reject(result);
      };
      this.stdoutListeners.add(onLine);
      this.child.once('exit', onExit);
    });
  }

  /** SIGTERM, then SIGKILL if the child has not exited within `graceMs`. Safe to call more than once. */
  async stop(graceMs = 3000): Promise<void> {
    if (!this.running) return;
    this.child.kill('SIGTERM');
    const timedOut = await Promise.race([this.exited.then(() => false), delay(graceMs).then(() => true)]);
    if (timedOut && this.running) {
      this.child.kill('SIGKILL');
      await this.exited;
    }
  }

  /** For `process.on('exit')`, where nothing asynchronous runs: kill outright. */
  killNow(): void {
    if (this.running) this.child.kill('SIGKILL');
  }

  private keep(line: string): void {
    this.linesAfterMark++;
    this.tail.push(line);
    if (this.tail.length > OUTPUT_TAIL_LINES) this.tail.shift();
  }
}

export interface LaunchOptions {
  /** Run the script under `taskset -c <core>` (every thread of the child inherits it); null: not pinned. */
  core: number | null;
  /** Extra node flags, e.g. `--cpu-prof`. */
  nodeFlags?: readonly string[];
  /** The script to run; the built CLI unless given. */
  script?: string;
  /** A command node runs under, e.g. valgrind and its flags (the noise-free mode); it must keep node's pid. */
  wrapper?: readonly string[];
  /** Open files the child may hold (`ulimit -n` in a shell that then execs it, keeping the pid); default: inherited. */
  fileLimit?: number;
}

/** The hard limit on open files (`ulimit -Hn`) a child can be given here; Infinity when unlimited. */
export function hardFileLimit(): number {
  const text = execFileSync('sh', ['-c', 'ulimit -Hn'], { encoding: 'utf8' }).trim();
  return text === 'unlimited' ? Number.POSITIVE_INFINITY : Number(text);
}

/**
 * Starts `node [flags] script args`, through `taskset -c N` when pinned. taskset sets the affinity and then
 * execs node in place, so the pid we hold is still the pid of the process we measure and signal (valgrind, as
 * a wrapper, runs node in its own process too).
 */
export function startProcess(
  name: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
  launch: LaunchOptions = { core: null },
): ManagedProcess {
  const command = [
    ...(launch.wrapper ?? []),
    process.execPath,
    ...(launch.nodeFlags ?? []),
    launch.script ?? CLI_PATH,
    ...args,
  ];
  const pinned = launch.core === null ? command : ['taskset', '-c', String(launch.core), ...command];
  // The shell raises its own limit, then execs the rest in place: the pid stays the measured process's.
  const limited =
    launch.fileLimit === undefined
      ? pinned
      : ['sh', '-c', 'ulimit -n "$0" && exec "$@"', String(launch.fileLimit), ...pinned];
  const [file = process.execPath, ...rest] = limited;
  // Under a wrapper the gateway gets glibc's malloc settings from the start: re-executing itself to set them would
  // leave valgrind behind.
  const childEnv = launch.wrapper === undefined ? env : { ...env, ...GLIBC_MALLOC_ENV };
  const child = spawn(file, rest, { env: childEnv, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  return new ManagedProcess(name, child);
}

/** Waits for a child's one JSON line naming where it listens (`{"url": …}`), printed once it does. */
export async function listeningUrl(child: ManagedProcess, timeoutMs = 15_000): Promise<string> {
  const line = await child.nextStdoutLine(timeoutMs);
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    throw new Error(`The ${child.name} printed ${line}, not its JSON address line.`);
  }
  const url = (parsed as { url?: unknown }).url;
  if (typeof url !== 'string') throw new Error(`The ${child.name}'s address line has no url: ${line}`);
  return url;
}

/** Polls `url` until it answers 200; fails early when the process dies. */
export async function waitForHealthy(url: string, owner: ManagedProcess, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastProblem = 'no answer yet';
  while (Date.now() < deadline) {
    if (!owner.running)
      throw new Error(
        `The ${owner.name} ${owner.exitDescription()} before it was ready:\n${owner.outputTail().join('\n')}`,
      );
    try {
      const response = await request(url, { method: 'GET', headersTimeout: 2000, bodyTimeout: 2000 });
      await response.body.dump();
      if (response.statusCode === 200) return;
      lastProblem = `status ${response.statusCode}`;
    } catch (error) {
      lastProblem = error instanceof Error ? error.message : String(error);
    }
    await delay(100);
  }
  throw new Error(`The ${owner.name} did not answer 200 on ${url} within ${timeoutMs} ms (${lastProblem}).`);
}

/** Clock ticks per second of /proc/<pid>/stat times; 100 on practically every Linux. */
export function clockTicksPerSecond(): number {
  try {
    const value = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    return Number.isInteger(value) && value > 0 ? value : 100;
  } catch {
    return 100;
  }
}

/**
 * utime + stime of a process, in clock ticks; with `reapedChildren`, plus cutime + cstime: the CPU of children it
 * has waited for (PostgreSQL's postmaster reaps its short-lived autovacuum workers and closed backends).
 */
export function cpuTicks(pid: number, reapedChildren = false): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Field 2 (comm) is in parentheses and may hold spaces: count fields from the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // After comm, fields start at 3 (state); utime, stime, cutime and cstime are fields 14 to 17.
  const lastField = reapedChildren ? 17 : 15;
  const times = fields.slice(14 - 3, lastField - 3 + 1).map(Number);
  if (!times.every(Number.isFinite)) throw new Error(`Unexpected /proc/${pid}/stat: ${stat}`);
  return times.reduce((sum, value) => sum + value, 0);
}

export interface MemoryReading {
  /** Resident set size now, in KiB. */
  rssKiB: number;
  /** Peak resident set size since start (VmHWM), in KiB. */
  peakRssKiB: number;
}

export function memory(pid: number): MemoryReading {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string): number => {
    const match = new RegExp(`^${name}:\\s+(\\d+) kB$`, 'm').exec(status);
    if (match === null) throw new Error(`/proc/${pid}/status has no ${name}.`);
    return Number(match[1]);
  };
  return { rssKiB: field('VmRSS'), peakRssKiB: field('VmHWM') };
}

/**
 * Resets the process's peak RSS (VmHWM) to its current RSS (`echo 5 > /proc/PID/clear_refs`, Linux 4.0+), so
 * the next reading is the peak of what follows. False when the kernel or permissions do not allow it.
 */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** The CPUs a process may run on (`Cpus_allowed_list` of /proc/PID/status), e.g. "0" or "0-1". */
export function cpusAllowed(pid: number): string {
  try {
    return /^Cpus_allowed_list:\s+(\S+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 'unknown';
  } catch {
    return 'unknown';
  }
}
