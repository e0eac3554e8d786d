/** Command-line options of `npm run bench -- [options]`. */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { BackendName } from './backends.js';
import { UPSTREAM_MODES, type UpstreamMode } from './scenarios.js';

export interface BenchOptions {
  /** Rounds per scenario; each round runs both targets once, in alternating order. */
  rounds: number;
  /** Length of one target's turn in a round. */
  durationMs: number;
  /** Warm-up per target and scenario, before anything is measured. */
  warmupMs: number;
  /** At start, the gateway's warm-up runs at least this many requests per route and mode (and twice warmupMs). */
  warmupRequests: number;
  /** Sequential requests per route kind in the PostgreSQL/Redis round-trip count. */
  roundTripRequests: number;
  backends: BackendName[];
  /** Only the scenarios these words pick (all when empty): `scenarioPicked`. */
  scenarioFilter: string[];
  pin: boolean;
  /** Directory for the gateway's `node --cpu-prof` output; undefined: no profile. */
  cpuProfileDir: string | undefined;
  /** Exit 1 when a target is missed, not only when a response check fails. */
  strict: boolean;
  /** Where the JSON record goes; undefined: bench/results/latest.json. */
  out: string | undefined;
  quick: boolean;
  /** Add the long-stream and large-prompt scenarios (SHAPE_SCENARIOS). */
  shapes: boolean;
  /** PostgreSQL: one hot account vs 50 accounts at concurrency 64, with round trips per request (accounts.ts). */
  accounts: boolean;
  /** The noise-free mode: instructions per request under callgrind instead of the timed scenarios. */
  callgrind: boolean;
  /** Callgrind mode: requests of each kind before counting (V8 still compiles before that). */
  callgrindWarmup: number;
  /** Callgrind mode: counted requests of each kind (a tenth of them for 500-chunk streams). */
  callgrindRequests: number;
  /**
   * Callgrind mode: only these kinds (json, stream, stream-500ch, translated-stream, translated-500ch, json-32kb,
   * json-256kb); all when empty.
   */
  callgrindKinds: string[];
  /** Callgrind mode: keep the dumps here (for callgrind_annotate) instead of in the run's temp dir. */
  callgrindDumps: string | undefined;
  /** The soak mode: seconds of mixed load with the gateway's memory sampled (undefined: no soak). */
  soakSeconds: number | undefined;
  /** The gateway exports OpenTelemetry traces and metrics to an OTLP sink on loopback (`otlp-sink.ts`). */
  otel: boolean;
  /** How the mock writes every stream: each event on its own (default), the same at `upstreamPaceMs`, or coalesced. */
  upstream: UpstreamMode;
  /** `--upstream paced`: ms between content events, a vendor's pace. */
  upstreamPaceMs: number;
  /** The c10k mode: slow streams held open at once on one gateway and the floor (c10k.ts); undefined: not run. */
  c10k: C10kOptions | undefined;
  /** The scale-out mode: gateway instance counts on PostgreSQL + Redis, e.g. [1, 2, 3]; undefined: not run. */
  instances: number[] | undefined;
}

export interface C10kOptions {
  /** Streams held open at once, one chunk a second each. */
  streams: number;
  /** New requests sent one after another while they are held, for the added time to first token. */
  probes: number;
  /** Seconds of chunk delays read once every stream is open. */
  holdSeconds: number;
}

export const USAGE = `Usage: npm run bench -- [options]

  --quick               2 rounds of 400 ms per target and scenario, short warm-up, no idle reading after the
                        load (1-2 min in all)
  --rounds N            rounds per scenario (default 4; 2 with --quick)
  --duration-ms N       length of each target's turn in a round (default 1500; 400 with --quick)
  --warmup-ms N         warm-up per target and scenario (default 500; 150 with --quick)
  --warmup-requests N   at start, the gateway's warm-up: at least N requests (and twice --warmup-ms) for
                        each route, JSON and stream (default 2000; 400 with --quick); again, on the scenario's
                        route and kind, for the gateway and the floor before each paced scenario
  --round-trips N       requests per route kind for the PostgreSQL/Redis round-trip count (default 200; 40 with --quick)
  --backends LIST       sqlite,postgres (default both; postgres needs PostgreSQL and Redis, see README)
  --shapes              add the shapes of real replies: streams of 500 and 2,000 chunks (same-format
                        with the floor, and translated), a 20-chunk translated stream at c1 to measure them
                        against, prompts of 32 KB and 256 KB at c16 with the floor, and 64 paced streams in
                        flight with the floor, arriving evenly (same-format-paced-c64: added time to first token
                        under load) and all starting together (same-format-paced-c64-burst, shown); reports
                        per-chunk CPU. 9 more scenarios: about 3 min more with the default rounds on SQLite
                        (where the floor runs), 2 min on PostgreSQL; 30-45 s per backend with --quick
  --accounts            PostgreSQL: one hot account vs 50 accounts (same-format JSON, concurrency 64) in alternating
                        turns on the measured gateway: req/s and CPU per request of each, then PostgreSQL and Redis
                        round trips per request of each under that load (a second gateway through the counting
                        relays), then ledger verify. ~1 min to create the accounts plus 2 x rounds x duration.
                        With --scenarios matching nothing (e.g. --scenarios none) only this runs
  --callgrind           the noise-free mode instead of the timed scenarios: instructions per request of the
                        gateway (SQLite) and the floor under valgrind --tool=callgrind, JSON and stream (and a
                        500-chunk stream with --shapes, the translated route's 20- and 500-chunk streams: an OpenAI
                        client on the Anthropic vendor, and JSON with 32 KB and 256 KB prompts), one request at a
                        time: requests 4,000 to 5,500 of each kind are counted. Needs valgrind (skipped, saying so, without it); 30-50 min on this machine (valgrind runs node ~50x slower).
                        --scenarios picks kinds by name (json, stream, stream-500ch), e.g. --scenarios stream
  --callgrind-warmup N  callgrind mode: requests of each kind before counting (default 4000: V8's optimizing
                        compiler has settled by then; its remaining share is reported apart)
  --callgrind-requests N
                        callgrind mode: requests counted per kind (default 1500; a tenth of both for 500-chunk streams
                        and large prompts)
  --callgrind-kinds LIST
                        callgrind mode: only these kinds (json, stream, stream-500ch; with --shapes also
                        translated-stream, translated-500ch, json-32kb, json-256kb), e.g. json for a shorter run
  --callgrind-dumps DIR callgrind mode: keep the dumps in DIR (per-function counts: callgrind_annotate DIR/gateway.*.2)
  --soak SECONDS        the soak mode instead of the timed scenarios: 64 clients of mixed traffic (three routes,
                        3 streams to 1 JSON) on one gateway (SQLite) for SECONDS, its RSS and V8 heap sampled
                        ~120 times, and their slope after the first quarter in MB/min (e.g. --soak 600)
  --otel                every gateway the run starts exports OpenTelemetry traces and GenAI metrics
                        (OTEL_EXPORTER_OTLP_ENDPOINT, the SDK's default batching) to an OTLP sink on the load core
                        that accepts and discards them: run once with and once without to read tracing's cost
  --upstream MODE       how the mock writes every stream: per-event (default: each SSE event in its own socket
                        write, as vendors send them), paced (the same with --upstream-pace-ms between content
                        events: a vendor's pace), coalesced (node:http's one write per tick: the older bench's
                        figures). A default run also shows same-format-stream-c1-coalesced as a second figure
  --upstream-pace-ms N  --upstream paced: ms between content events (default 20)
  --c10k                the c10k mode instead of the timed scenarios: one gateway (SQLite, billing on) holds
                        --c10k-streams slow streams (one chunk a second) open at once, then the floor does; reports
                        RSS per open stream above the idle process, added TTFT p99 of new requests meanwhile, and
                        the worst delay of a chunk between the mock's write and the client's read, less the floor's
  --c10k-streams N      c10k mode: streams held open at once (default 10000; at most what the file limit allows)
  --c10k-probes N       c10k mode: new requests sent one by one while the streams are held (default 200)
  --c10k-hold-s N       c10k mode: seconds of chunk delays read once every stream is open (default 20)
  --instances LIST      the scale-out mode instead of the timed scenarios: 1, 2, ... gateway instances on one
                        PostgreSQL schema and Redis, paid JSON requests spread over them: total req/s and the
                        database's share of the machine's CPU per instance count, e.g. --instances 1,2,3
  --scenarios LIST      only scenarios whose id contains one of these words, e.g. same-format-json-c16; a word
                        ending in $ picks only the id it spells, e.g. 'same-format-json-c1$' (quoted for the shell)
  --no-pin              do not pin processes to cores with taskset
  --cpu-prof DIR        run the gateway under node --cpu-prof, profiles written to DIR when it stops
  --strict              exit 1 when any target is missed (default: only when a response is wrong)
  --out PATH            JSON record path (default bench/results/latest.json)
  -h, --help            this text

Default run: 11 scenarios x 2 backends x 4 rounds x 2 targets x 1.5 s plus warm-ups, 5-7 minutes in all,
plus the floor proxy in 5 same-format scenarios of the first backend (about 40 s more) and, per backend, 12 s
at rest before the load and 32 s after it for the idle RSS readings.
`;

export class OptionsError extends Error {}

const BACKEND_NAMES: readonly BackendName[] = ['sqlite', 'postgres'];

/** Parses the arguments; returns undefined when help was asked for. */
export function parseBenchOptions(argv: readonly string[]): BenchOptions | undefined {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    options: {
      quick: { type: 'boolean' },
      shapes: { type: 'boolean' },
      accounts: { type: 'boolean' },
      callgrind: { type: 'boolean' },
      'callgrind-warmup': { type: 'string' },
      'callgrind-requests': { type: 'string' },
      'callgrind-kinds': { type: 'string' },
      'callgrind-dumps': { type: 'string' },
      soak: { type: 'string' },
      otel: { type: 'boolean' },
      upstream: { type: 'string' },
      'upstream-pace-ms': { type: 'string' },
      c10k: { type: 'boolean' },
      'c10k-streams': { type: 'string' },
      'c10k-probes': { type: 'string' },
      'c10k-hold-s': { type: 'string' },
      instances: { type: 'string' },
      rounds: { type: 'string' },
      'duration-ms': { type: 'string' },
      'warmup-ms': { type: 'string' },
      'warmup-requests': { type: 'string' },
      'round-trips': { type: 'string' },
      backends: { type: 'string' },
      scenarios: { type: 'string' },
      'no-pin': { type: 'boolean' },
      'cpu-prof': { type: 'string' },
      strict: { type: 'boolean' },
      out: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help === true) return undefined;
  const quick = values.quick === true;
  const backends = list(values.backends) ?? [...BACKEND_NAMES];
  for (const name of backends) {
    if (!BACKEND_NAMES.includes(name as BackendName))
      throw new OptionsError(`--backends takes ${BACKEND_NAMES.join(', ')}; got "${name}".`);
  }
  const upstream = values.upstream ?? 'per-event';
  if (!UPSTREAM_MODES.includes(upstream as UpstreamMode))
    throw new OptionsError(`--upstream takes ${UPSTREAM_MODES.join(', ')}; got "${upstream}".`);
  const c10kStreams = wholeNumber('c10k-streams', values['c10k-streams'], 1);
  const c10kProbes = wholeNumber('c10k-probes', values['c10k-probes'], 1);
  const c10kHold = wholeNumber('c10k-hold-s', values['c10k-hold-s'], 2);
  const c10kAsked = values.c10k === true || c10kStreams !== undefined;
  const instances = instanceCounts(values.instances);
  const modes = [values.callgrind === true, values.soak !== undefined, c10kAsked, instances !== undefined];
  if (modes.filter(Boolean).length > 1)
    throw new OptionsError('--callgrind, --soak, --c10k and --instances are separate modes: choose one.');
  return {
    quick,
    upstream: upstream as UpstreamMode,
    upstreamPaceMs: wholeNumber('upstream-pace-ms', values['upstream-pace-ms'], 1) ?? 20,
    c10k: c10kAsked
      ? { streams: c10kStreams ?? 10_000, probes: c10kProbes ?? (quick ? 50 : 200), holdSeconds: c10kHold ?? 20 }
      : undefined,
    instances,
    shapes: values.shapes === true,
    accounts: values.accounts === true,
    callgrind: values.callgrind === true,
    callgrindWarmup: wholeNumber('callgrind-warmup', values['callgrind-warmup'], 0) ?? 4000,
    callgrindRequests: wholeNumber('callgrind-requests', values['callgrind-requests'], 1) ?? 1500,
    callgrindKinds: list(values['callgrind-kinds']) ?? [],
    callgrindDumps: values['callgrind-dumps'] === undefined ? undefined : resolve(values['callgrind-dumps']),
    soakSeconds: wholeNumber('soak', values.soak, 10),
    otel: values.otel === true,
    rounds: wholeNumber('rounds', values.rounds, 1) ?? (quick ? 2 : 4),
    durationMs: wholeNumber('duration-ms', values['duration-ms'], 50) ?? (quick ? 400 : 1500),
    warmupMs: wholeNumber('warmup-ms', values['warmup-ms'], 0) ?? (quick ? 150 : 500),
    warmupRequests: wholeNumber('warmup-requests', values['warmup-requests'], 0) ?? (quick ? 400 : 2000),
    roundTripRequests: wholeNumber('round-trips', values['round-trips'], 1) ?? (quick ? 40 : 200),
    backends: backends as BackendName[],
    scenarioFilter: list(values.scenarios) ?? [],
    pin: values['no-pin'] !== true,
    cpuProfileDir: values['cpu-prof'] === undefined ? undefined : resolve(values['cpu-prof']),
    strict: values.strict === true,
    out: values.out === undefined ? undefined : resolve(values.out),
  };
}

function list(raw: string | undefined): string[] | undefined {
  if (raw === undefined) return undefined;
  const items = raw
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
  return items.length === 0 ? undefined : items;
}

/** `--instances 1,2,3`: distinct counts of at least 1, in the order given (each a separate measurement). */
function instanceCounts(raw: string | undefined): number[] | undefined {
  const items = list(raw);
  if (raw !== undefined && items === undefined) throw new OptionsError('--instances takes counts such as 1,2,3.');
  if (items === undefined) return undefined;
  const counts = items.map((item) => {
    if (!/^\d+$/.test(item) || Number(item) < 1 || Number(item) > 16)
      throw new OptionsError(`--instances takes counts from 1 to 16; got "${item}".`);
    return Number(item);
  });
  if (new Set(counts).size !== counts.length) throw new OptionsError('--instances lists a count twice.');
  return counts;
}

function wholeNumber(name: string, raw: string | undefined, min: number): number | undefined {
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) < min)
    throw new OptionsError(`--${name} must be a whole number of at least ${min}.`);
  return Number(raw);
}
