/*
 * glibc's malloc, told to return freed memory to the system: `tollgate serve` re-executes itself once (the same pid,
 * through `process.execve`, in glibc-malloc-reexec.ts) with these two variables set, before anything else loads,
 * because glibc reads them only when a process starts.
 *
 * Why: V8's optimizing compiler works in zones it mallocs, up to ~57 MB while the gateway warms up, and frees them
 * once the code is compiled. glibc raises its mmap threshold each time such a block is freed, so later zones come
 * from the main heap, and its freed pages stay below live allocations: 41 MB of glibc heap at the peak of the bench's
 * concurrency-128 run. With the mmap threshold fixed at 64 KB, blocks that large are mapped and unmapped on their
 * own, and a trim threshold of 64 KB gives back the heap's free top: peak RSS at c128 278–291 → 249–264 MB in four
 * alternated pairs, no CPU per request measurably added (decision record 0027).
 *
 * Left alone when the operator set either variable or any glibc malloc tunable (GLIBC_TUNABLES), on other systems
 * (musl, macOS and Windows ignore the variables or cannot exec in place), and on a Node without `process.execve`
 * (Node 22): the gateway then runs with glibc's defaults.
 */
export const GLIBC_MALLOC_ENV = {
  MALLOC_MMAP_THRESHOLD_: '65536',
  MALLOC_TRIM_THRESHOLD_: '65536',
} as const;

/** What the process needs to be started again with, or undefined when it runs as it is. */
export function mallocReexecEnvironment(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  platform: NodeJS.Platform,
  canExecInPlace: boolean,
): NodeJS.ProcessEnv | undefined {
  const command = argv.slice(2).find((arg) => !arg.startsWith('-'));
  if (command !== 'serve' || platform !== 'linux' || !canExecInPlace) return undefined;
  const chosen = Object.keys(GLIBC_MALLOC_ENV).some((name) => env[name] !== undefined);
  if (chosen || /glibc\.malloc\./.test(env.GLIBC_TUNABLES ?? '')) return undefined;
  return { ...env, ...GLIBC_MALLOC_ENV };
}
