/**
 * What is measured: the routes (which client protocol meets which vendor protocol), the targets of each
 * (the mock upstream called directly in the vendor's protocol, the gateway in front of it in the client's
 * protocol, and in a few same-format scenarios the floor: a bare Node pass-through proxy in front of the mock,
 * bench/floor-proxy.ts) and the load shapes. Every target gets the same work from the mock, so the difference
 * is the proxy's own.
 */
import { REPLY_CHUNKS, type UpstreamWrites } from './mock-reply.js';
import type { Protocol } from './response-checks.js';

export type TargetName = 'direct' | 'gateway' | 'floor';

export interface Target {
  name: TargetName;
  protocol: Protocol;
  /** `http://host:port`. */
  origin: string;
  /** Path of the chat-completions or messages endpoint on that origin. */
  path: string;
  model: string;
  apiKey: string;
}

export type RouteId = 'same-format' | 'openai-to-anthropic' | 'anthropic-to-openai';

export interface Route {
  id: RouteId;
  /** Protocol the bench speaks to the gateway. */
  client: Protocol;
  /** Public model id asked of the gateway: its family decides the vendor protocol. */
  gatewayModel: string;
  /** Protocol the gateway speaks to the mock, and the bench when it calls the mock directly. */
  upstream: Protocol;
  /** The vendor model id the gateway sends upstream for `gatewayModel`. */
  upstreamModel: string;
}

export const ROUTES: Readonly<Record<RouteId, Route>> = {
  'same-format': {
    id: 'same-format',
    client: 'openai',
    gatewayModel: 'beta-5.4',
    upstream: 'openai',
    upstreamModel: 'gpt-5.4',
  },
  'openai-to-anthropic': {
    id: 'openai-to-anthropic',
    client: 'openai',
    gatewayModel: 'alpha-sonnet-5',
    upstream: 'anthropic',
    upstreamModel: 'claude-sonnet-5',
  },
  'anthropic-to-openai': {
    id: 'anthropic-to-openai',
    client: 'anthropic',
    gatewayModel: 'beta-5.4',
    upstream: 'openai',
    upstreamModel: 'gpt-5.4',
  },
};

export interface Scenario {
  id: string;
  title: string;
  route: Route;
  stream: boolean;
  concurrency: number;
  /** Milliseconds the mock waits before each content chunk (the forwarding check); 0: none. */
  paceMs: number;
  /** The floor proxy is measured too (once per bench run, see run.ts). */
  floor: boolean;
  /** Content deltas of each reply: REPLY_CHUNKS, or a long stream's count (`--shapes`). */
  chunks: number;
  /** Filler added to the prompt, in KiB (0: the short prompt), for the large-prompt shapes. */
  promptKiB: number;
  /**
   * How the workers' first requests are spread, in ms: 0, all at once (every worker starts together, and with
   * replies of equal length they stay in step: a burst of `concurrency` starts every reply); otherwise worker i
   * starts at i x startSpreadMs / concurrency, so requests arrive evenly while `concurrency` are in flight.
   */
  startSpreadMs: number;
  /** How the mock writes the stream's events: each in its own socket write (the default), or a tick's in one. */
  writes: UpstreamWrites;
}

/** The shape of one request and its reply: what the load client asks of the mock through the prompt. */
export type RequestShape = Pick<Scenario, 'stream' | 'paceMs'> &
  Partial<Pick<Scenario, 'chunks' | 'promptKiB' | 'writes'>>;

function scenario(
  routeId: RouteId,
  stream: boolean,
  concurrency: number,
  {
    paceMs = 0,
    floor = false,
    chunks = REPLY_CHUNKS,
    promptKiB = 0,
    burst = false,
    writes = 'per-event' as UpstreamWrites,
  } = {},
): Scenario {
  const kind = `${stream ? (paceMs > 0 ? `stream paced ${paceMs} ms` : 'stream') : 'non-stream'}${writes === 'coalesced' ? ', upstream writes coalesced' : ''}`;
  const shape = `${chunks === REPLY_CHUNKS ? '' : `-${chunks}ch`}${promptKiB === 0 ? '' : `-${promptKiB}kb`}${burst ? '-burst' : ''}${writes === 'coalesced' ? '-coalesced' : ''}`;
  const id = `${routeId}-${stream ? (paceMs > 0 ? 'paced' : 'stream') : 'json'}-c${concurrency}${shape}`;
  const arrivals = paceMs === 0 ? '' : burst ? ', all starting together' : ', arrivals spread over a reply';
  const shapeTitle = `${chunks === REPLY_CHUNKS ? '' : `, ${chunks} chunks`}${promptKiB === 0 ? '' : `, ${promptKiB} KB prompt`}${arrivals}`;
  // Paced replies take chunks x paceMs: spreading the first requests over that keeps arrivals even for the
  // whole round. Unpaced scenarios measure throughput, where a burst at the start is immaterial.
  const startSpreadMs = paceMs > 0 && !burst ? chunks * paceMs : 0;
  return {
    id,
    title: `${routeId}, ${kind}, concurrency ${concurrency}${shapeTitle}`,
    route: ROUTES[routeId],
    stream,
    concurrency,
    paceMs,
    floor,
    chunks,
    promptKiB,
    startSpreadMs,
    writes,
  };
}

/** Gap the mock leaves between chunks in the forwarding check: long enough that a batch cannot hide. */
export const PACE_MS = 10;

/**
 * The floor runs where the issue's targets are judged (CPU at c16 with c1 and c128 beside it, added latency
 * and time to first token at c1): four scenarios, about 30 s of a default run, and a fifth, the c1 stream on an
 * upstream that coalesces its events (shown, not judged: vendors write each event on its own).
 */
export const SCENARIOS: readonly Scenario[] = [
  scenario('same-format', false, 1, { floor: true }),
  scenario('same-format', false, 16, { floor: true }),
  scenario('same-format', false, 128, { floor: true }),
  scenario('same-format', true, 1, { floor: true }),
  // The second figure: the same stream with the mock's events coalesced, as the bench used to send them.
  scenario('same-format', true, 1, { floor: true, writes: 'coalesced' }),
  scenario('same-format', true, 64),
  scenario('same-format', true, 1, { paceMs: PACE_MS }),
  scenario('openai-to-anthropic', false, 16),
  scenario('openai-to-anthropic', true, 64),
  scenario('anthropic-to-openai', false, 16),
  scenario('anthropic-to-openai', true, 64),
];

export const MAX_CONCURRENCY = Math.max(...SCENARIOS.map((each) => each.concurrency));

/** Prompt sizes of the large-prompt shapes, in KB: their difference gives CPU per KB of prompt. */
export const PROMPT_KIB = [32, 256] as const;

/** Chunk counts of the long-stream shapes: real replies are hundreds to thousands of chunks. */
export const LONG_STREAM_CHUNKS = [500, 2000] as const;

/**
 * `--shapes`: the reply and prompt shapes real traffic has, each with the floor beside it. Long streams at
 * concurrency 1 (same-format and translated), so per-chunk CPU is (CPU of an N-chunk stream - CPU of the
 * 20-chunk one) / (N - 20) against the `same-format-stream-c1` scenario of the same run; large prompts at
 * concurrency 16 next to `same-format-json-c16`; 64 paced streams in flight with the floor, for the added time to
 * first token under load (the issue's target: <= 1 ms), once with requests arriving evenly (64 in flight, one
 * starting every ~3 ms: steady load) and once with all 64 starting together, in step (a burst: each start
 * waits for the ones before it, so its TTFT measures how long 64 starts take, not load). Adds 9 scenarios: about
 * 3 min to a default run's SQLite part (which measures the floor too), 2 min to its PostgreSQL part.
 */
export const SHAPE_SCENARIOS: readonly Scenario[] = [
  ...LONG_STREAM_CHUNKS.map((chunks) => scenario('same-format', true, 1, { floor: true, chunks })),
  ...LONG_STREAM_CHUNKS.map((chunks) => scenario('openai-to-anthropic', true, 1, { chunks })),
  scenario('openai-to-anthropic', true, 1),
  ...PROMPT_KIB.map((promptKiB) => scenario('same-format', false, 16, { floor: true, promptKiB })),
  scenario('same-format', true, 64, { paceMs: PACE_MS, floor: true }),
  scenario('same-format', true, 64, { paceMs: PACE_MS, floor: true, burst: true }),
];

/** What every stream of a run is read on: events written one by one (default), the same at a vendor's pace, or coalesced. */
export type UpstreamMode = 'per-event' | 'paced' | 'coalesced';
export const UPSTREAM_MODES: readonly UpstreamMode[] = ['per-event', 'paced', 'coalesced'];

/**
 * Whether `--scenarios` picks this scenario: none given picks all; a word picks the ids that contain it, and a word
 * ending in `$` only the id it spells (`same-format-json-c1$`: c1 alone, without c16 and c128).
 */
export function scenarioPicked(id: string, words: readonly string[]): boolean {
  if (words.length === 0) return true;
  return words.some((word) => (word.endsWith('$') ? id === word.slice(0, -1) : id.includes(word)));
}

/**
 * The scenarios as the run's upstream mode has them: `paced` gives every unpaced stream `paceMs` between content
 * events (a vendor's pace; arrivals spread over a reply as in the paced scenarios), `coalesced` every stream the
 * mock's coalesced writes. Ids stay, so the targets still find their scenarios; titles say what changed.
 */
export function withUpstreamMode(scenarios: readonly Scenario[], mode: UpstreamMode, paceMs: number): Scenario[] {
  return scenarios.map((each) => {
    if (!each.stream || mode === 'per-event') return each;
    if (mode === 'coalesced')
      return each.writes === 'coalesced'
        ? each
        : { ...each, writes: 'coalesced', title: `${each.title}, upstream writes coalesced` };
    if (each.paceMs > 0) return each;
    return {
      ...each,
      paceMs,
      startSpreadMs: each.concurrency > 1 ? each.chunks * paceMs : 0,
      title: `${each.title}, at a vendor's pace of ${paceMs} ms`,
    };
  });
}

/**
 * The targets of a route: the mock in the vendor's protocol, the gateway in the client's, and the floor proxy
 * (its origin when it runs) asked exactly what the mock is asked, since it forwards the bytes unchanged.
 */
export function targetsFor(
  route: Route,
  mockOrigin: string,
  gatewayOrigin: string,
  gatewayKey: string,
  floorOrigin?: string,
): Record<Exclude<TargetName, 'floor'>, Target> & { floor?: Target } {
  const direct: Target = {
    name: 'direct',
    protocol: route.upstream,
    origin: mockOrigin,
    path: route.upstream === 'openai' ? '/openai/v1/chat/completions' : '/anthropic/v1/messages',
    model: route.upstreamModel,
    apiKey: 'sk-bench-direct',
  };
  return {
    direct,
    floor: floorOrigin === undefined ? undefined : { ...direct, name: 'floor', origin: floorOrigin },
    gateway: {
      name: 'gateway',
      protocol: route.client,
      origin: gatewayOrigin,
      path: route.client === 'openai' ? '/v1/chat/completions' : '/v1/messages',
      model: route.gatewayModel,
      apiKey: gatewayKey,
    },
  };
}

const FILLER = 'the river runs slowly past the old mill and the reeds lean over the water. ';

/**
 * The request body, split around the nonce so each request costs the client one string concatenation.
 * The nonce and the pace travel in the prompt because the gateway forwards the conversation, not custom headers.
 */
export function requestBodyParts(
  target: Target,
  stream: boolean,
  paceMs: number,
  {
    chunks = REPLY_CHUNKS,
    promptKiB = 0,
    writes = 'per-event',
    stamp = false,
  }: Partial<Pick<Scenario, 'chunks' | 'promptKiB' | 'writes'>> & { stamp?: boolean } = {},
): { before: string; after: string } {
  const marker = '@@NONCE@@';
  const asks = `${paceMs > 0 ? ` pace-ms=${paceMs}` : ''}${chunks === REPLY_CHUNKS ? '' : ` reply-chunks=${chunks}`}${writes === 'coalesced' ? ' upstream-writes=coalesced' : ''}${stamp ? ' stamp-chunks' : ''}`;
  // Filler of ordinary words (tokenizers and JSON scanners see prose, not one repeated byte), after the asks.
  const filler =
    promptKiB === 0
      ? ''
      : ` Context: ${FILLER.repeat(Math.ceil((promptKiB * 1024) / FILLER.length)).slice(0, promptKiB * 1024)}`;
  const prompt = `Benchmark prompt bench-nonce-${marker}${asks}: describe a quiet river in the morning.${filler}`;
  const body =
    target.protocol === 'openai'
      ? {
          model: target.model,
          messages: [{ role: 'user', content: prompt }],
          ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
        }
      : {
          model: target.model,
          max_tokens: 256,
          messages: [{ role: 'user', content: prompt }],
          ...(stream ? { stream: true } : {}),
        };
  const [before = '', after = ''] = JSON.stringify(body).split(marker);
  return { before, after };
}
