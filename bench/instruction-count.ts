/**
 * The noise-free mode (`npm run bench -- --callgrind`): instructions per request, counted by valgrind's
 * callgrind in the gateway's and the floor's processes (every thread: the main loop, V8's compiler and GC
 * helpers, libuv's pool, SQLite's checkpointer). Instruction counts do not move with a noisy neighbour, the
 * CPU's clock or the core a process lands on, so a change of a few percent can be seen on this shared
 * machine, where /proc CPU times cannot show it.
 *
 * Node's JIT writes code that callgrind must re-read (`--smc-check=all-non-file`), and V8 is still compiling
 * for the first few thousand requests of a route (after 1,500 its optimizing compiler was still 20-44% of a
 * window): each target gets 4,000 requests of every kind first (`--callgrind-warmup`), then
 * callgrind's counters are zeroed (`callgrind_control -z`), the counted requests are sent one at a time, and the
 * counters are dumped (`callgrind_control -d`) and read. callgrind_control reaches an idle process through vgdb,
 * so nothing but the counted requests runs between the zeroing and the dump.
 *
 * Each count also says how much of it was V8's optimizing compiler (TurboFan jobs on its background threads,
 * read from the dump with callgrind_annotate): measured 2026-11-27, it was 40% of a JSON window after 3,000
 * requests of warm-up, and how many functions still get compiled inside a window is what makes the total
 * differ by ~30% from run to run. A long-running gateway compiles its hot code once; the rest of the count is
 * what every request costs.
 */
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import { TargetClient } from './load.js';
import type { ManagedProcess } from './processes.js';
import type { BenchOptions } from './options.js';
import { LONG_STREAM_CHUNKS, PROMPT_KIB, type RequestShape, type RouteId, type Target } from './scenarios.js';

const execFileAsync = promisify(execFile);

/** callgrind_control waits for the process to take the command; under valgrind that can take a while. */
const CONTROL_TIMEOUT_MS = 120_000;
/** How long a dump may take to appear whole (its last line is `totals:`). */
const DUMP_WAIT_MS = 30_000;

/**
 * `--dump-instr=no --dump-line=no`: only function-level totals are needed, and they keep the dumps small.
 * Collection stays on from the start: only the difference between a zeroing and a dump is read.
 */
const CALLGRIND_FLAGS = ['--tool=callgrind', '--smc-check=all-non-file', '--dump-instr=no', '--dump-line=no'] as const;

/** The wrapper that runs a child under callgrind, its dumps named `<name>.<pid>.<n>` in `directory`. */
export function callgrindWrapper(directory: string, name: string): string[] {
  return ['valgrind', ...CALLGRIND_FLAGS, `--callgrind-out-file=${join(directory, `${name}.%p`)}`];
}

/** Why the mode cannot run here (valgrind or callgrind_control missing), or undefined when it can. */
export async function callgrindProblem(): Promise<string | undefined> {
  for (const [command, args] of [
    ['valgrind', ['--version']],
    ['callgrind_control', ['--version']],
    ['callgrind_annotate', ['--version']],
  ] as const) {
    try {
      await execFileAsync(command, [...args], { timeout: 10_000 });
    } catch (error) {
      // callgrind_annotate prints its version and exits 255: only a missing program is a problem there.
      if (command === 'callgrind_annotate' && (error as NodeJS.ErrnoException).code !== 'ENOENT') continue;
      return `${command} is not usable (${error instanceof Error ? error.message : String(error)}); install valgrind (apt-get install valgrind)`;
    }
  }
  return undefined;
}

/** The total Ir of one callgrind dump: its `summary:` line. */
export function dumpTotal(text: string): number {
  const match = /^summary:\s+(\d+)\s*$/m.exec(text);
  if (match?.[1] === undefined) throw new Error('callgrind dump has no summary line');
  return Number(match[1]);
}

/** The function whose inclusive cost is everything V8's optimizing compiler did on its background threads. */
const COMPILER_JOB = 'v8::internal::OptimizingCompileDispatcher::CompileTask::RunInternal()';

/**
 * The optimizing compiler's instructions in one dump, from `callgrind_annotate --inclusive=yes` output (a line
 * `1,234 (5.6%)  ???:<COMPILER_JOB> [/usr/bin/node]`); 0 when no compile job ran in the window.
 */
export function compilerInstructions(annotated: string): number {
  for (const line of annotated.split('\n')) {
    if (!line.includes(COMPILER_JOB)) continue;
    const match = /^\s*([\d,]+)\s/.exec(line);
    if (match?.[1] !== undefined) return Number(match[1].replaceAll(',', ''));
  }
  return 0;
}

/** The highest dump number of `<name>.<pid>.<n>` in `directory`; 0 when none was written yet. */
export function latestDumpNumber(files: readonly string[], name: string, pid: number): number {
  const prefix = `${name}.${pid}.`;
  let latest = 0;
  for (const file of files) {
    if (!file.startsWith(prefix)) continue;
    const number = Number(file.slice(prefix.length));
    if (Number.isInteger(number) && number > latest) latest = number;
  }
  return latest;
}

/**
 * A child running under callgrind (started with callgrindWrapper): zero its counters, dump and read them.
 * `host` is the HOST the child was given (the gateway's listen address; undefined when unset): valgrind names
 * the vgdb pipes callgrind_control talks through after $USER and $HOST, so callgrind_control must see the same.
 */
export class CallgrindProcess {
  private readonly env: NodeJS.ProcessEnv;

  constructor(
    readonly child: ManagedProcess,
    private readonly directory: string,
    private readonly name: string,
    host: string | undefined,
  ) {
    const { HOST: _bench, ...rest } = process.env;
    this.env = host === undefined ? rest : { ...rest, HOST: host };
  }

  async zero(): Promise<void> {
    await execFileAsync('callgrind_control', ['-z', String(this.child.pid)], {
      timeout: CONTROL_TIMEOUT_MS,
      env: this.env,
    });
  }

  /** Dumps the counters and returns the instructions since the last zeroing, and the optimizing compiler's share. */
  async dump(): Promise<{ total: number; compiler: number }> {
    const before = latestDumpNumber(readdirSync(this.directory), this.name, this.child.pid);
    const control = await execFileAsync('callgrind_control', ['-d', String(this.child.pid)], {
      timeout: CONTROL_TIMEOUT_MS,
      env: this.env,
    });
    const path = join(this.directory, `${this.name}.${this.child.pid}.${before + 1}`);
    const deadline = Date.now() + DUMP_WAIT_MS;
    for (;;) {
      try {
        const text = readFileSync(path, 'utf8');
        if (/^totals:/m.test(text)) {
          const annotated = await execFileAsync('callgrind_annotate', ['--inclusive=yes', '--threshold=100', path], {
            timeout: CONTROL_TIMEOUT_MS,
            maxBuffer: 256 * 1024 * 1024,
          });
          return { total: dumpTotal(text), compiler: compilerInstructions(annotated.stdout) };
        }
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
      if (Date.now() > deadline)
        throw new Error(
          `callgrind wrote no complete dump ${path} within ${DUMP_WAIT_MS} ms (files: ${readdirSync(this.directory).join(', ')}; callgrind_control said: ${`${control.stdout}${control.stderr}`.trim()})`,
        );
      await delay(100);
    }
  }
}

export interface InstructionKind {
  /** `json`, `stream`, `stream-500ch`, `translated-stream`, `translated-500ch`, `json-32kb`, `json-256kb`. */
  kind: string;
  /** The route, when not the same-format one (the translated kinds: an OpenAI client on an Anthropic vendor). */
  route?: RouteId;
  shape: RequestShape;
  /** Counted requests of this kind (long streams use fewer: each is many short ones' worth of chunks). */
  requests: number;
  /** Requests of this kind before any counting. */
  warmupRequests: number;
}

/**
 * The kinds a run can count: JSON and the 20-chunk stream on the same-format route; with --shapes the 500-chunk stream
 * (a tenth as many requests: each is 25 short streams' worth of chunks) and the translated route's 20- and 500-chunk
 * streams (an OpenAI client on the Anthropic vendor), whose difference is its cost per extra chunk, and JSON requests
 * with 32 KB and 256 KB prompts (a tenth as many: each carries hundreds of short prompts' bytes), whose difference is
 * the cost per KB of prompt.
 */
export function instructionKinds(
  options: Pick<BenchOptions, 'shapes' | 'callgrindRequests' | 'callgrindWarmup'>,
): InstructionKind[] {
  const stream: RequestShape = { stream: true, paceMs: 0 };
  const short = (kind: string, shape: RequestShape, route?: RouteId): InstructionKind => ({
    kind,
    ...(route === undefined ? {} : { route }),
    shape,
    requests: options.callgrindRequests,
    warmupRequests: options.callgrindWarmup,
  });
  // The 20-chunk streams have compiled the stream path; a tenth of the requests is still 25x the chunks.
  const long = (kind: string, chunks: number, route?: RouteId): InstructionKind => ({
    ...short(kind, { ...stream, chunks }, route),
    requests: Math.max(1, Math.round(options.callgrindRequests / 10)),
    warmupRequests: Math.round(options.callgrindWarmup / 10),
  });
  const prompt = (promptKiB: number): InstructionKind => ({
    ...short(`json-${promptKiB}kb`, { stream: false, paceMs: 0, promptKiB }),
    requests: Math.max(1, Math.round(options.callgrindRequests / 10)),
    warmupRequests: Math.round(options.callgrindWarmup / 10),
  });
  const chunks = LONG_STREAM_CHUNKS[0];
  return [
    short('json', { stream: false, paceMs: 0 }),
    short('stream', stream),
    ...(options.shapes
      ? [
          long(`stream-${chunks}ch`, chunks),
          short('translated-stream', stream, 'openai-to-anthropic'),
          long(`translated-${chunks}ch`, chunks, 'openai-to-anthropic'),
          ...PROMPT_KIB.map(prompt),
        ]
      : []),
  ];
}

export interface InstructionCount {
  target: 'gateway' | 'floor';
  kind: string;
  warmupRequests: number;
  requests: number;
  instructions: number;
  instructionsPerRequest: number;
  /** Of `instructions`, V8's optimizing compiler (background jobs compiling hot code: a warm-up cost, not a per-request one). */
  compilerInstructions: number;
  /** Per request without the optimizing compiler's jobs: what a request costs once the hot code is compiled. */
  withoutCompilerPerRequest: number;
}

/**
 * A request's wait under valgrind: the load client's 30 s is too short for a gateway running ~50x slower on a core
 * other work shares (a 500-chunk stream's warm-up timed out that way).
 */
const REQUEST_TIMEOUT_MS = 600_000;

/** Sends `count` requests one at a time; any wrong answer stops the count (a fast wrong answer is not a figure). */
async function sendSequentially(client: TargetClient, count: number, what: string, stop: AbortSignal): Promise<void> {
  for (let i = 0; i < count; i++) {
    stop.throwIfAborted();
    const outcome = await client.send();
    if (!outcome.ok) throw new Error(`${what}: ${outcome.problem}`);
  }
}

/**
 * Warms every kind up with `warmupRequests` requests, then counts each kind's window. Warm-ups come first for all
 * kinds, so a later window does not pay for compiling code an earlier kind did not reach.
 */
export async function countInstructions(
  name: 'gateway' | 'floor',
  process: CallgrindProcess,
  /** The target, or the target of each kind's route. */
  target: Target | ((kind: InstructionKind) => Target),
  kinds: readonly InstructionKind[],
  noncePrefix: string,
  stop: AbortSignal,
  progress: (message: string) => void,
): Promise<InstructionCount[]> {
  const targetOf = typeof target === 'function' ? target : () => target;
  const clients = kinds.map(
    (kind, index) => new TargetClient(targetOf(kind), 1, kind.shape, `${noncePrefix}${index}`, REQUEST_TIMEOUT_MS),
  );
  try {
    for (const [index, kind] of kinds.entries()) {
      const client = clients[index];
      if (client === undefined) continue;
      progress(`  ${name}: warming ${kind.kind} up, ${kind.warmupRequests} requests under callgrind`);
      await sendSequentially(client, kind.warmupRequests, `${name} ${kind.kind} warm-up`, stop);
    }
    const counts: InstructionCount[] = [];
    for (const [index, kind] of kinds.entries()) {
      const client = clients[index];
      if (client === undefined) continue;
      await process.zero();
      await sendSequentially(client, kind.requests, `${name} ${kind.kind} counted`, stop);
      const { total: instructions, compiler } = await process.dump();
      const count: InstructionCount = {
        target: name,
        kind: kind.kind,
        warmupRequests: kind.warmupRequests,
        requests: kind.requests,
        instructions,
        instructionsPerRequest: instructions / kind.requests,
        compilerInstructions: compiler,
        withoutCompilerPerRequest: (instructions - compiler) / kind.requests,
      };
      progress(
        `  ${name} ${kind.kind}: ${(count.instructionsPerRequest / 1e6).toFixed(3)} M instructions per request over ${kind.requests}, ` +
          `${(count.withoutCompilerPerRequest / 1e6).toFixed(3)} M without the optimizing compiler's jobs`,
      );
      counts.push(count);
    }
    return counts;
  } finally {
    for (const client of clients) await client.destroy();
  }
}

/** The optimizing compiler's share of a count, e.g. "12%"; "-" without a count. */
export function compilerShare(count: InstructionCount | undefined): string {
  if (count === undefined || count.instructions <= 0) return '-';
  return `${((count.compilerInstructions / count.instructions) * 100).toFixed(0)}%`;
}

/**
 * The table: instructions per request of the gateway and the floor per kind, and their ratio, with and without the
 * compiler's jobs, and what share of each count the compiler's jobs were.
 */
export function formatInstructionCounts(counts: readonly InstructionCount[]): string {
  const millions = (value: number | undefined): string => (value === undefined ? '-' : `${(value / 1e6).toFixed(3)} M`);
  const ratio = (gateway: number | undefined, floor: number | undefined): string =>
    gateway !== undefined && floor !== undefined && floor > 0 ? `${(gateway / floor).toFixed(2)}x` : '-';
  const kinds = [...new Set(counts.map((count) => count.kind))];
  const lines = [
    `instructions per request (callgrind, every thread of the process, requests one at a time after ${counts[0]?.warmupRequests.toLocaleString('en') ?? '-'} of warm-up per kind);`,
    "'w/o JIT': without V8's optimizing compiler jobs (compiling hot code, which a warmed-up gateway has done);",
    "'JIT': the compiler jobs' share of the count",
    `${'kind'.padEnd(16)}${'requests'.padStart(10)}${'gateway'.padStart(12)}${'floor'.padStart(12)}${'gw/floor'.padStart(10)}` +
      `${'gw w/o JIT'.padStart(12)}${'fl w/o JIT'.padStart(12)}${'gw/floor'.padStart(10)}${'gw JIT'.padStart(8)}${'fl JIT'.padStart(8)}`,
  ];
  for (const kind of kinds) {
    const gateway = counts.find((count) => count.kind === kind && count.target === 'gateway');
    const floor = counts.find((count) => count.kind === kind && count.target === 'floor');
    lines.push(
      `${kind.padEnd(16)}${String(gateway?.requests ?? floor?.requests ?? '-').padStart(10)}${millions(gateway?.instructionsPerRequest).padStart(12)}` +
        `${millions(floor?.instructionsPerRequest).padStart(12)}${ratio(gateway?.instructionsPerRequest, floor?.instructionsPerRequest).padStart(10)}` +
        `${millions(gateway?.withoutCompilerPerRequest).padStart(12)}${millions(floor?.withoutCompilerPerRequest).padStart(12)}` +
        `${ratio(gateway?.withoutCompilerPerRequest, floor?.withoutCompilerPerRequest).padStart(10)}` +
        `${compilerShare(gateway).padStart(8)}${compilerShare(floor).padStart(8)}`,
    );
  }
  return lines.join('\n');
}
