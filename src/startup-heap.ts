import { setFlagsFromString } from 'node:v8';

/*
 * Start-up keeps V8's new space at its initial size. Loading ~400 modules and building the app allocates objects
 * that all survive (code, closures, schemas), and V8 answers a high survival rate by doubling the semi-spaces
 * after scavenges, up to their 16 MB maximum: the idle gateway then held a 32 MB new space with ~9 MB in use,
 * until V8's memory reducer shrank it some 30 s later. With the growth factor at 1 while starting, what survives
 * goes to old space as it would anyway, and the new space stays at 2 × 2 MB (heap committed 57 → 40 MB).
 *
 * The factor is set back to V8's default (2) once the gateway listens, so under load the new space grows exactly
 * as before: request throughput and its GC behaviour are those of a default heap. Nothing changes when the
 * operator tunes the new space with a flag (NODE_OPTIONS or the command line).
 *
 * Imported by the CLI entry point before it loads anything else (cli.ts). `semi_space_growth_factor` is read by
 * V8 at each growth decision, so changing it at run time takes effect at the next scavenge.
 */
const V8_DEFAULT_GROWTH_FACTOR = 2;

const tunedByOperator = [...process.execArgv, process.env.NODE_OPTIONS ?? ''].some((arg) => /semi[-_]space/.test(arg));

if (!tunedByOperator) setFlagsFromString('--semi-space-growth-factor=1');

/** Start-up is over: the new space may grow again under load. */
export function endStartupHeapSizing(): void {
  if (!tunedByOperator) setFlagsFromString(`--semi-space-growth-factor=${V8_DEFAULT_GROWTH_FACTOR}`);
}
