import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  callgrindWrapper,
  CallgrindProcess,
  compilerInstructions,
  countInstructions,
  dumpTotal,
  formatInstructionCounts,
  instructionKinds,
  latestDumpNumber,
} from './instruction-count.js';
import { fileURLToPath } from 'node:url';
import { parseBenchOptions } from './options.js';
import { childEnvironment, listeningUrl, startProcess } from './processes.js';
import { ROUTES, targetsFor } from './scenarios.js';

/** The built mock (`npx tsc -p tsconfig.json`, as `npm run bench` builds it): node runs it without a TypeScript loader. */
const BUILT_MOCK_PATH = fileURLToPath(new URL('../dist/bench/mock-upstream.js', import.meta.url));

function hasValgrind(): boolean {
  try {
    execFileSync('valgrind', ['--version']);
    execFileSync('callgrind_control', ['--version']);
    return true;
  } catch {
    return false;
  }
}

describe('callgrind dumps', () => {
  it('reads the total from the summary line', () => {
    expect(dumpTotal('version: 1\nevents: Ir\nsummary: 123456789\n\nfn=(1) main\n1 5\ntotals: 123456789\n')).toBe(
      123456789,
    );
    expect(() => dumpTotal('events: Ir\n')).toThrow(/summary/);
  });

  it('finds the newest numbered dump of one process, ignoring others and the final one', () => {
    const files = ['gateway.41', 'gateway.41.1', 'gateway.41.2', 'gateway.411.7', 'floor.41.9', 'gateway.41.10'];
    expect(latestDumpNumber(files, 'gateway', 41)).toBe(10);
    expect(latestDumpNumber(files, 'gateway', 5)).toBe(0);
  });

  it('prints the gateway beside the floor with their ratio', () => {
    const text = formatInstructionCounts([
      {
        target: 'gateway',
        kind: 'json',
        warmupRequests: 1500,
        requests: 1500,
        instructions: 3e9,
        instructionsPerRequest: 2e6,
        compilerInstructions: 1.5e9,
        withoutCompilerPerRequest: 1e6,
      },
      {
        target: 'floor',
        kind: 'json',
        warmupRequests: 1500,
        requests: 1500,
        instructions: 7.5e8,
        instructionsPerRequest: 5e5,
        compilerInstructions: 0,
        withoutCompilerPerRequest: 5e5,
      },
    ]);
    expect(text).toMatch(/json\s+1500\s+2\.000 M\s+0\.500 M\s+4\.00x\s+1\.000 M\s+0\.500 M\s+2\.00x\s+50%\s+0%/);
    expect(text).toContain('after 1,500 of warm-up per kind');
  });

  it('counts from request 4,000 of each kind unless told otherwise', () => {
    expect(parseBenchOptions(['--callgrind'])?.callgrindWarmup).toBe(4000);
    expect(parseBenchOptions(['--callgrind', '--callgrind-warmup', '6000'])?.callgrindWarmup).toBe(6000);
  });

  it("reads the optimizing compiler's inclusive instructions from callgrind_annotate's output", () => {
    const annotated = [
      '818,244,103 (100.0%)  PROGRAM TOTALS',
      '357,421,252 (43.68%)  ./nptl/./nptl/pthread_create.c:start_thread [/usr/lib/x86_64-linux-gnu/libc.so.6]',
      '331,228,160 (40.48%)  ???:v8::internal::OptimizingCompileDispatcher::CompileTask::RunInternal() [/usr/bin/node]',
      '331,170,563 (40.47%)  ???:v8::internal::OptimizingCompileDispatcher::CompileNext(v8::internal::TurbofanCompilationJob*, v8::internal::LocalIsolate*) [/usr/bin/node]',
    ].join('\n');
    expect(compilerInstructions(annotated)).toBe(331228160);
    expect(compilerInstructions('818 (100.0%)  PROGRAM TOTALS\n')).toBe(0);
  });

  it('takes the kinds to count and a directory to keep the dumps in', () => {
    const options = parseBenchOptions(['--callgrind', '--callgrind-kinds', 'json', '--callgrind-dumps', 'cg']);
    expect(options?.callgrindKinds).toEqual(['json']);
    expect(options?.callgrindDumps).toBe(join(process.cwd(), 'cg'));
    expect(parseBenchOptions(['--callgrind'])?.callgrindKinds).toEqual([]);
    expect(parseBenchOptions(['--callgrind'])?.callgrindDumps).toBeUndefined();
  });
});

describe('the kinds counted', () => {
  it('adds the long stream, the translated route (an OpenAI client on the Anthropic vendor) and large prompts with --shapes', () => {
    const options = { callgrindRequests: 300, callgrindWarmup: 800 };
    expect(instructionKinds({ ...options, shapes: false }).map((kind) => kind.kind)).toEqual(['json', 'stream']);
    const kinds = instructionKinds({ ...options, shapes: true });
    expect(
      kinds.map((kind) => [
        kind.kind,
        kind.route ?? 'same-format',
        kind.shape.chunks ?? 20,
        kind.requests,
        kind.warmupRequests,
      ]),
    ).toEqual([
      ['json', 'same-format', 20, 300, 800],
      ['stream', 'same-format', 20, 300, 800],
      ['stream-500ch', 'same-format', 500, 30, 80],
      ['translated-stream', 'openai-to-anthropic', 20, 300, 800],
      ['translated-500ch', 'openai-to-anthropic', 500, 30, 80],
      ['json-32kb', 'same-format', 20, 30, 80],
      ['json-256kb', 'same-format', 20, 30, 80],
    ]);
    expect(kinds.map((kind) => kind.shape.promptKiB ?? 0)).toEqual([0, 0, 0, 0, 0, 32, 256]);
  });
});

// A real process under callgrind (the bench's mock upstream, the smallest server the bench has): the counted
// window grows with the requests sent in it, so the figure is the requests' and not a constant or a start-up's.
describe.skipIf(!hasValgrind())('counting under callgrind', () => {
  it('counts the instructions of the requests between the zeroing and the dump', { timeout: 300_000 }, async () => {
    const directory = mkdtempSync(join(tmpdir(), 'tollgate-callgrind-test-'));
    const mock = startProcess('mock upstream', ['--port', '0'], childEnvironment({}), directory, {
      core: null,
      script: BUILT_MOCK_PATH,
      wrapper: callgrindWrapper(directory, 'mock'),
    });
    try {
      const origin = await listeningUrl(mock, 120_000);
      const target = targetsFor(ROUTES['same-format'], origin, 'http://unused', 'unused').direct;
      const process = new CallgrindProcess(mock, directory, 'mock', undefined);
      const progress = () => {};
      const stop = new AbortController().signal;
      const kinds = (requests: number, warmupRequests: number) => [
        { kind: 'json', shape: { stream: false, paceMs: 0 }, requests, warmupRequests },
      ];
      const [few] = await countInstructions('floor', process, target, kinds(5, 20), 'a', stop, progress);
      const [many] = await countInstructions('floor', process, target, kinds(40, 0), 'b', stop, progress);
      expect(few?.requests).toBe(5);
      expect(few?.instructions).toBeGreaterThan(0);
      expect(many?.instructions).toBeGreaterThan(2 * (few?.instructions ?? Infinity));
      expect(many?.compilerInstructions).toBeGreaterThanOrEqual(0);
      expect(many?.compilerInstructions).toBeLessThan(many?.instructions ?? 0);
      expect(
        latestDumpNumber(execFileSync('ls', [directory], { encoding: 'utf8' }).split('\n'), 'mock', mock.pid),
      ).toBe(2);
    } finally {
      await mock.stop(20_000);
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
