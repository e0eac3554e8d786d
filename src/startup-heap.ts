import { setFlagsFromString } from 'node:v8';

/*
 * Start-up keeps V8's new space at its initial size. Loading ~400 modules and building the app allocates objects
 * that all survive (code, closures, schemas), and V8 answers a high survival rate by doubling the semi-spaces
 * after scavenges, up to their 16 MB maximum: the idle gateway then held a 32 MB new space with ~9 MB in use,
 * until V8's memory reducer shrank it some 30 s later. With the growth factor at 1 while starting, what survives
 * goes to old space as it would anyway, and the new space stays at 2 × 2 MB (heap committed 57 → 40 MB).
 *
 * The factor is set back to V8's default (2) once the gateway listens, so under load the new space grows as with
 * V8's defaults. Nothing changes when the operator tunes the new space with a flag (NODE_OPTIONS or the command
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

const args = [...process.execArgv, process.env.NODE_OPTIONS ?? ''];
const tunedByOperator = args.some((arg) => /semi[-_]space/.test(arg));
const oldSpaceTunedByOperator = args.some((arg) => /heap[-_]growing[-_]percent/.test(arg));

if (!tunedByOperator) setFlagsFromString('--semi-space-growth-factor=1');

/** Start-up is over: the new space may grow again under load; old space grows by half its live size at most. */
export function endStartupHeapSizing(): void {
  if (!tunedByOperator) setFlagsFromString(`--semi-space-growth-factor=${V8_DEFAULT_GROWTH_FACTOR}`);
  if (!oldSpaceTunedByOperator) setFlagsFromString(`--heap-growing-percent=${OLD_SPACE_GROWING_PERCENT}`);
}
