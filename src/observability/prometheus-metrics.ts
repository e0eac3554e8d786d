import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { VendorName } from '../canonical/request.js';
import { DeferredCounter, type PendingCount } from './deferred-counter.js';
import { DeploymentSeries } from './deployment-metrics.js';
import type { DeploymentHealth, GatewayMetrics } from './gateway-metrics.js';

/** Seconds; request latency spans sub-millisecond refusals to multi-minute streams. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
const FIRST_TOKEN_BUCKETS = [0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 20, 60];

/** The settlement journal's counts (billing/settlement-journal.ts keeps them), as its series read them. */
export interface JournalCounts {
  /** Entries on disk waiting to be applied (this instance's and the ones it adopted). */
  pending: number;
  /**
   * Settlements whose journal write failed: in this process's memory only, tried again on the journal and on the
   * store until one takes them; lost if the process dies first.
   */
  unwritten: number;
  /** Settlements this instance wrote and fdatasynced to its journal since it started. */
  journaled: number;
  /** Failed writes to the journal (settlement batches and recovery probes). */
  writeFailures: number;
  /** Whether the journal cannot be written now. */
  unavailable: boolean;
  /** Journaled settlements applied by replay, and ones found already applied (skipped). */
  replayed: number;
  alreadyApplied: number;
  /** Lines of adopted files that failed their checksum (a torn last line after a crash). */
  unreadableLines: number;
}

/** Gauges read at scrape time from the gateway's live state. */
export interface LiveGauges {
  /** Requests whose handlers are running (streams included). */
  inFlightRequests?: () => number;
  /** Rate-limiter backend failures so far (Redis). */
  rateLimiterFailures?: () => number;
  /** The settlement journal's counts. */
  settlementJournal?: () => JournalCounts;
  /** The operator's deployments: requests in flight and circuit state. */
  deployments?: () => readonly DeploymentHealth[];
}

/**
 * GatewayMetrics as Prometheus series (prom-client), in a registry of its own so several gateways in one
 * process (tests) never collide. Label values are bounded: routes are patterns, models are catalog ids or
 * `other`, vendors and reasons come from fixed sets.
 */
export class PrometheusMetrics implements GatewayMetrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'route' | 'model' | 'status'>;
  private readonly latency: Histogram<'route' | 'model'>;
  private readonly firstToken: Histogram<'model'>;
  private readonly upstreamErrors: Counter<'vendor' | 'reason'>;
  private readonly upstreamRetries: Counter<'vendor'>;
  private readonly upstreamAttempts: Counter<'vendor' | 'credential' | 'outcome'>;
  private readonly droppedSpans: Counter<'reason'>;
  private readonly upstreamLatency: Histogram<'vendor' | 'credential'>;
  private readonly tokens: Counter<'model' | 'kind'>;
  private readonly cost: Counter<'model'>;
  private readonly rateLimitRefusals: Counter<'limit'>;
  private readonly orphaned: Counter;
  private readonly orphanedSettled: Counter;
  private readonly slices: Counter<'model' | 'outcome'>;
  private readonly unbilled: Counter<'model'>;
  private readonly unbilledUsageTokens: Counter<'model'>;
  private readonly unbilledUsageCost: Counter<'model'>;
  private readonly credentials: Gauge<'vendor' | 'credential'>;
  private readonly deployments: DeploymentSeries;
  /** Request and token counts, summed per label set and handed to their counters at scrape time (deferred-counter.ts). */
  private readonly requestCounts = new DeferredCounter<'route' | 'model' | 'status'>();
  private readonly tokenCounts = new DeferredCounter<'model' | 'kind'>();
  /**
   * Per-request label sets by route, then model, then status (no key string to build per request): the count
   * and the latency histogram's child. The label sets are few and bounded (see the class comment).
   */
  private readonly requestChildren = new Map<
    string,
    Map<string, Map<number, { count: PendingCount; latency: { observe(value: number): void } }>>
  >();
  private readonly firstTokenChildren = new Map<string, { observe(value: number): void }>();
  private readonly tokenChildren = new Map<
    string,
    { input: PendingCount; output: PendingCount; cacheRead: PendingCount; cacheWrite: PendingCount }
  >();
  private readonly costChildren = new Map<string, { inc(value: number): void }>();

  constructor(live: LiveGauges = {}) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    const requestCounts = this.requestCounts;
    const tokenCounts = this.tokenCounts;
    this.requests = new Counter({
      name: 'tollgate_http_requests_total',
      help: 'Finished API requests by route pattern, model and HTTP status.',
      labelNames: ['route', 'model', 'status'],
      registers,
      collect() {
        requestCounts.flush(this);
      },
    });
    this.latency = new Histogram({
      name: 'tollgate_http_request_duration_seconds',
      help: 'Time from request arrival to the end of the response (streams: the last byte).',
      labelNames: ['route', 'model'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.firstToken = new Histogram({
      name: 'tollgate_time_to_first_token_seconds',
      help: 'Time from request arrival to the first model output sent to the client.',
      labelNames: ['model'],
      buckets: FIRST_TOKEN_BUCKETS,
      registers,
    });
    this.upstreamErrors = new Counter({
      name: 'tollgate_upstream_errors_total',
      help: 'Failed upstream attempts by vendor and reason.',
      labelNames: ['vendor', 'reason'],
      registers,
    });
    this.droppedSpans = new Counter({
      name: 'tollgate_telemetry_dropped_spans_total',
      help: 'Trace spans not delivered to the OTLP collector: queue_full (export queue full) or export_failed.',
      labelNames: ['reason'],
      registers,
    });
    // Shown at 0 from the start, so an alert on its rate has a series to read.
    for (const reason of ['queue_full', 'export_failed']) this.droppedSpans.inc({ reason }, 0);
    this.upstreamAttempts = new Counter({
      name: 'tollgate_upstream_attempts_total',
      help: 'Upstream attempts by credential (deployment/label for named deployments) and outcome (ok or the reason).',
      labelNames: ['vendor', 'credential', 'outcome'],
      registers,
    });
    this.upstreamLatency = new Histogram({
      name: 'tollgate_upstream_answer_seconds',
      help: 'Seconds from sending an upstream attempt to its answer (first output of a stream), by credential.',
      labelNames: ['vendor', 'credential'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    });
    this.upstreamRetries = new Counter({
      name: 'tollgate_upstream_retries_total',
      help: 'Upstream attempts retried before anything reached the client.',
      labelNames: ['vendor'],
      registers,
    });
    this.tokens = new Counter({
      name: 'tollgate_tokens_total',
      help: 'Tokens of settled requests by model and kind (input, output, cache_read, cache_write).',
      labelNames: ['model', 'kind'],
      registers,
      collect() {
        tokenCounts.flush(this);
      },
    });
    this.cost = new Counter({
      name: 'tollgate_cost_usd_total',
      help: 'Charged amount of settled requests in USD (an approximation for dashboards; the ledger is exact).',
      labelNames: ['model'],
      registers,
    });
    this.rateLimitRefusals = new Counter({
      name: 'tollgate_rate_limit_refusals_total',
      help: 'Requests refused by the per-key rate limiter, by window (requests or tokens).',
      labelNames: ['limit'],
      registers,
    });
    this.orphaned = new Counter({
      name: 'tollgate_orphaned_reservations_released_total',
      help: 'Reservations released by the sweeper because their request never settled.',
      registers,
    });
    this.orphanedSettled = new Counter({
      name: 'tollgate_orphaned_reservations_settled_total',
      help: 'Holds of a dead instance settled by the sweeper at their last checkpoint of delivered output (status instance_lost).',
      registers,
    });
    this.slices = new Counter({
      name: 'tollgate_output_slices_total',
      help: 'Requests for one more slice of output on a live hold, by outcome (granted, refused: the reply ended as a length stop).',
      labelNames: ['model', 'outcome'],
      registers,
    });
    this.unbilled = new Counter({
      name: 'tollgate_unbilled_output_tokens_total',
      help: 'Output tokens the vendor produced after a refused slice and before the upstream closed: never delivered, never billed.',
      labelNames: ['model'],
      registers,
    });
    this.unbilledUsageTokens = new Counter({
      name: 'tollgate_unbilled_usage_tokens_total',
      help: 'Reported tokens a settlement could not charge: past the free allowance, the balance or the key spend limit.',
      labelNames: ['model'],
      registers,
    });
    this.unbilledUsageCost = new Counter({
      name: 'tollgate_unbilled_usage_usd_total',
      help: 'The list price of the reported tokens a settlement could not charge, USD.',
      labelNames: ['model'],
      registers,
    });
    this.credentials = new Gauge({
      name: 'tollgate_upstream_credential_cooling_down',
      help: 'Upstream credential state: 0 healthy, 1 cooling down (circuit open).',
      labelNames: ['vendor', 'credential'],
      registers,
    });
    if (live.inFlightRequests !== undefined) {
      const read = live.inFlightRequests;
      new Gauge({
        name: 'tollgate_in_flight_requests',
        help: 'Requests being handled right now (streams included).',
        registers,
        collect() {
          this.set(read());
        },
      });
    }
    if (live.rateLimiterFailures !== undefined) {
      const read = live.rateLimiterFailures;
      new Counter({
        name: 'tollgate_rate_limiter_failures_total',
        help: 'Rate-limiter backend (Redis) failures; decisions then follow RATE_LIMIT_FAIL_OPEN.',
        registers,
        collect() {
          this.reset();
          this.inc(read());
        },
      });
    }
    if (live.settlementJournal !== undefined) this.registerJournalSeries(live.settlementJournal, registers);
    this.deployments = new DeploymentSeries(registers, live.deployments);
  }

  /** The settlement journal, read at scrape time: what waits for the store, and what replay did. */
  private registerJournalSeries(read: () => JournalCounts, registers: Registry[]): void {
    const gauges: Array<[string, string, (counts: JournalCounts) => number]> = [
      [
        'tollgate_settlement_journal_pending',
        'Settlements the database refused, on disk in the journal and not applied yet (replayed when it answers).',
        (counts) => counts.pending,
      ],
      [
        'tollgate_settlement_journal_unwritten',
        'Settlements the database refused whose journal write failed too: in memory only, tried again on both, lost if the process dies.',
        (counts) => counts.unwritten,
      ],
      [
        'tollgate_settlement_journal_unavailable',
        '1 while the settlement journal cannot be written (paid requests are then refused with 503).',
        (counts) => (counts.unavailable ? 1 : 0),
      ],
    ];
    for (const [name, help, value] of gauges) {
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(value(read()));
        },
      });
    }
    const counters: Array<[string, string, (counts: JournalCounts) => number]> = [
      [
        'tollgate_settlements_journaled_total',
        'Settlements the database could not take, written to the local journal and flushed to disk (fdatasync).',
        (counts) => counts.journaled,
      ],
      [
        'tollgate_settlement_journal_write_failures_total',
        'Writes to the settlement journal that failed (settlement batches and recovery probes).',
        (counts) => counts.writeFailures,
      ],
      ['tollgate_settlements_replayed_total', 'Journaled settlements applied by replay.', (counts) => counts.replayed],
      [
        'tollgate_settlements_replay_skipped_total',
        'Journaled settlements the database already had (applied once, skipped).',
        (counts) => counts.alreadyApplied,
      ],
      [
        'tollgate_settlement_journal_unreadable_lines_total',
        'Lines of adopted journals that failed their checksum (a torn last line after a crash).',
        (counts) => counts.unreadableLines,
      ],
    ];
    for (const [name, help, value] of counters) {
      new Counter({
        name,
        help,
        registers,
        collect() {
          this.reset();
          this.inc(value(read()));
        },
      });
    }
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** The exposition text for `GET /metrics`. */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  requestFinished(route: string, model: string, status: number, seconds: number): void {
    let byModel = this.requestChildren.get(route);
    if (byModel === undefined) {
      byModel = new Map();
      this.requestChildren.set(route, byModel);
    }
    let byStatus = byModel.get(model);
    if (byStatus === undefined) {
      byStatus = new Map();
      byModel.set(model, byStatus);
    }
    let children = byStatus.get(status);
    if (children === undefined) {
      children = {
        count: this.requestCounts.slot({ route, model, status: String(status) }),
        latency: this.latency.labels({ route, model }),
      };
      byStatus.set(status, children);
    }
    children.count.value += 1;
    children.latency.observe(seconds);
  }

  timeToFirstToken(model: string, seconds: number): void {
    let child = this.firstTokenChildren.get(model);
    if (child === undefined) {
      child = this.firstToken.labels({ model });
      this.firstTokenChildren.set(model, child);
    }
    child.observe(seconds);
  }

  upstreamError(vendor: VendorName, reason: string): void {
    this.upstreamErrors.inc({ vendor, reason });
  }

  upstreamAttempt(vendor: VendorName, credential: string, outcome: string, seconds: number | undefined): void {
    this.upstreamAttempts.inc({ vendor, credential, outcome });
    if (seconds !== undefined) this.upstreamLatency.observe({ vendor, credential }, seconds);
  }

  telemetrySpansDropped(reason: 'queue_full' | 'export_failed', count: number): void {
    this.droppedSpans.inc({ reason }, count);
  }

  upstreamRetry(vendor: VendorName): void {
    this.upstreamRetries.inc({ vendor });
  }

  usageSettled(
    model: string,
    tokens: { input: number; output: number; cacheRead: number; cacheWrite: number },
    costNano: bigint,
  ): void {
    let counts = this.tokenChildren.get(model);
    if (counts === undefined) {
      const slot = (kind: string) => this.tokenCounts.slot({ model, kind });
      counts = {
        input: slot('input'),
        output: slot('output'),
        cacheRead: slot('cache_read'),
        cacheWrite: slot('cache_write'),
      };
      this.tokenChildren.set(model, counts);
    }
    // Whole numbers (token counts), so the deferred sums are exact; a zero adds no series, as before.
    if (tokens.input > 0) counts.input.value += tokens.input;
    if (tokens.output > 0) counts.output.value += tokens.output;
    if (tokens.cacheRead > 0) counts.cacheRead.value += tokens.cacheRead;
    if (tokens.cacheWrite > 0) counts.cacheWrite.value += tokens.cacheWrite;
    if (costNano > 0n) {
      let child = this.costChildren.get(model);
      if (child === undefined) {
        child = this.cost.labels({ model });
        this.costChildren.set(model, child);
      }
      // Exporting as a float is fine here: this series is for graphs; money itself stays bigint in the ledger.
      child.inc(Number(costNano) / 1e9);
    }
  }

  rateLimitRefused(limit: 'requests' | 'tokens'): void {
    this.rateLimitRefusals.inc({ limit });
  }

  orphanedReservationsReleased(count: number): void {
    if (count > 0) this.orphaned.inc(count);
  }

  orphanedReservationsSettled(count: number): void {
    if (count > 0) this.orphanedSettled.inc(count);
  }

  outputSlice(model: string, granted: boolean): void {
    this.slices.inc({ model, outcome: granted ? 'granted' : 'refused' });
  }

  unbilledTokens(model: string, tokens: number): void {
    if (tokens > 0) this.unbilled.inc({ model }, tokens);
  }

  usageUnbilled(model: string, tokens: number, nanoUsd: bigint): void {
    if (tokens > 0) this.unbilledUsageTokens.inc({ model }, tokens);
    // A float for Prometheus only; the exact amount is on the usage record and the ledger line.
    if (nanoUsd > 0n) this.unbilledUsageCost.inc({ model }, Number(nanoUsd) / 1e9);
  }

  credentialState(vendor: VendorName, credential: string, coolingDown: boolean): void {
    this.credentials.set({ vendor, credential }, coolingDown ? 1 : 0);
  }

  deploymentAttempt(deployment: string, outcome: string, seconds: number | undefined): void {
    this.deployments.attempt(deployment, outcome, seconds);
  }
}
