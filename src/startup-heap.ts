import { PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';

/*
 * Start-up keeps V8's new space at its initial size. Loading ~400 modules and building the app allocates objects
 * that all survive (code, closures, schemas), and V8 answers a high survival rate by doubling the semi-spaces
 * after scavenges, up to their 16 MB maximum: the idle gateway then held a 32 MB new space with ~9 MB in use,
 * until V8's memory reducer shrank it some 30 s later. With the growth factor at 1 while starting, what survives
 * goes to old space as it would anyway, and the new space stays at 2 × 2 MB (heap committed 57 → 40 MB).
 *
 * The factor is set back to V8's default (2) once the gateway listens, so under load the new space grows, up to
 * the cap below. Nothing changes when the operator tunes the new space with a flag (NODE_OPTIONS or the command
 * line).
 *
 * Imported by the CLI entry point before it loads anything else (cli.ts). `semi_space_growth_factor` is read by
 * V8 at each growth decision, so changing it at run time takes effect at the next scavenge.
 */
const V8_DEFAULT_GROWTH_FACTOR = 2;

/*
 * Once serving, old space may grow to 1.5x what a full collection left live before the next one, instead of V8's
 * dynamic factor (up to 4x, and a first limit far above the gateway's ~25-30 MB of live objects). A request
 * promotes ~0.6-2 KB that is garbage by the next full collection (what was in flight at a scavenge), so with
 * V8's limits old space reached 70-75 MB with 25-30 MB live at the peak of the bench's c128 run, and a gateway
 * that had served 20,000 requests had not had a single full collection yet. At 1.5x the peak RSS at c128 was
 * 145-148 MB against 161-199 MB, for ~5-9% more CPU per request (the full collections' marking; measured by
 * `npm run bench`, docs/decisions/0013-old-space-growth-once-serving.md). An operator who prefers the CPU sets
 * the flag (`0` is V8's own growth) and it is left alone. `heap_growing_percent` is read at each limit
 * computation, so setting it at run time takes effect at the next.
 */
const OLD_SPACE_GROWING_PERCENT = 50;

/*
 * Once serving, the new space grows to 32 MB (two 16 MB semi-spaces, V8's maximum until V8 13: Node 22), not to
 * V8 13's own maximum, which on a machine with a few GB or more is 128 MB: under the bench's c128 load Node 24's
 * gateway then peaked at 363 MB of RSS against 146 MB on Node 20. The maximum itself (`--max-semi-space-size`) is
 * read only when the process starts, so the growth factor stands in for it: after each collection it is 1 once the
 * new space has reached the cap, and V8's 2 while it is below (after the memory reducer has shrunk it). The check
 * runs when the collection's entry is delivered, after the turn that triggered it, so one long turn can grow the
 * space one step past the cap. An operator's own new-space flag turns this off too.
 *
 * The cap lifts while old space holds more than OLD_SPACE_LIFT_BYTES: then the heap is that of thousands of open
 * streams, where each scavenge also walks the old objects pointing into the new space, and a small new space means
 * many more of them (978 against 256 scavenges holding 9,500 streams, a new request's first token +749 ms against
 * +103 ms at p99), while V8's 128 MB is a small share of such a heap (decision record 0026).
 */
const NEW_SPACE_CAP_BYTES = 32 * 1024 * 1024;
const OLD_SPACE_LIFT_BYTES = 128 * 1024 * 1024;

const args = [...process.execArgv, process.env.NODE_OPTIONS ?? ''];
const tunedByOperator = args.some((arg) => /semi[-_]space/.test(arg));
const oldSpaceTunedByOperator = args.some((arg) => /heap[-_]growing[-_]percent/.test(arg));

if (!tunedByOperator) setFlagsFromString('--semi-space-growth-factor=1');

/** Start-up is over: the new space may grow again under load; old space grows by half its live size at most. */
export function endStartupHeapSizing(): void {
  if (!tunedByOperator) capNewSpaceGrowth();
  if (!oldSpaceTunedByOperator) setFlagsFromString(`--heap-growing-percent=${OLD_SPACE_GROWING_PERCENT}`);
}

function capNewSpaceGrowth(): void {
  let growthFactor = 0;
  const check = () => {
    let newSpaceBytes = 0;
    let oldSpaceBytes = 0;
    for (const space of getHeapSpaceStatistics()) {
      if (space.space_name === 'new_space') newSpaceBytes = space.space_size;
      else if (space.space_name === 'old_space') oldSpaceBytes = space.space_used_size;
    }
    const capped = newSpaceBytes >= NEW_SPACE_CAP_BYTES && oldSpaceBytes <= OLD_SPACE_LIFT_BYTES;
    const wanted = capped ? 1 : V8_DEFAULT_GROWTH_FACTOR;
    if (wanted === growthFactor) return;
    growthFactor = wanted;
    setFlagsFromString(`--semi-space-growth-factor=${wanted}`);
  };
  check();
  new PerformanceObserver(check).observe({ entryTypes: ['gc'] });
}
