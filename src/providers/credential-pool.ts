import { GatewayError } from '../canonical/errors.js';
import type { VendorName } from '../canonical/request.js';
import { NO_METRICS, type GatewayMetrics } from '../observability/gateway-metrics.js';
import { rendezvousWeight, rendezvousSeed } from './rendezvous-hash.js';
import type { CircuitBreakerPolicy } from './upstream-settings.js';

/** What the operator view shows of one credential (never the key). */
export interface CredentialStatus {
  vendor: VendorName;
  label: string;
  baseUrl: string;
  /** `probing`: the cooldown is over and the next answer decides whether it is healthy again. */
  state: 'healthy' | 'cooling_down' | 'probing';
  /** ISO time the cooldown ends, while cooling down. */
  coolingDownUntil: string | undefined;
  /** Consecutive failed attempts since the last success. */
  recentFailures: number;
  /** The operator's deployment the credential belongs to (absent: the vendor's own credentials). */
  deployment?: string;
  /** Its share of requests relative to the others of its pool. */
  weight: number;
  /** Attempts made through it since start, and how many failed. */
  attempts: number;
  failures: number;
  /** The last failure's reason (`status_503`, `connect`, …) and when, if any. */
  lastError: { reason: string; at: string } | undefined;
  /** Mean time to the provider's answer of its successful attempts, in ms (undefined before one). */
  meanLatencyMs: number | undefined;
}

/**
 * A deployment's upstream requests in flight on this instance, shared by its credentials: a deployment at its
 * `maxConcurrent` is skipped like one cooling down.
 */
export interface DeploymentLoad {
  inFlight: number;
  readonly maxConcurrent: number | undefined;
}

/** One credential and its circuit-breaker state. `T` is what a request uses it through (an adapter). */
export interface PooledCredential<T> {
  readonly label: string;
  readonly baseUrl: string;
  readonly target: T;
  /** This credential's rendezvous-hashing seed, from its label (so adding or reordering credentials moves few conversations). */
  readonly seed: number;
  consecutiveFailures: number;
  /** Epoch ms; 0 when the circuit is closed. */
  coolingUntil: number;
  /** Times the circuit opened since the last success: each failed probe doubles the next cool-down. */
  openings: number;
  /** The half-open probe is in flight: after a cool-down one request is let through, the others wait for its answer. */
  probing: boolean;
  /** Its deployment's in-flight requests (absent: the vendor's own credentials, which have no limit). */
  readonly load?: DeploymentLoad;
  /** Share of requests relative to the pool's other credentials (1 unless a deployment's weight says otherwise). */
  readonly weight: number;
  readonly deployment?: string;
  /** Requests per minute at most (a deployment's `rpm`, split between its credentials); undefined: no limit. */
  readonly rpm?: number;
  /** Start times of its requests in the last minute, oldest first (only kept when `rpm` is set). */
  recentStarts: number[];
  /** Weighted round-robin's running credit (smooth weighted round-robin, as nginx spreads upstreams). */
  credit: number;
  stats: {
    attempts: number;
    failures: number;
    latencyTotalMs: number;
    successes: number;
    lastError?: { reason: string; at: number };
  };
}

/**
 * The credentials of one vendor. The requests of one conversation (one affinity key) go to the same credential,
 * because a vendor's prompt cache is per account: of the credentials not cooling down, the one with the highest
 * rendezvous weight for the key (highest-random-weight hashing: no state, conversations spread evenly, and a
 * credential that leaves moves only its own conversations, each to its next-highest). Requests without a key are
 * spread round-robin over those not cooling down. A credential
 * that fails `failureThreshold` times in a row is cooled down for `cooldownMs` (the circuit opens), after
 * which it is half open: one request probes it while the others go elsewhere. A success closes the circuit; a
 * failure opens it again for twice the last cool-down (up to `maxCooldownMs`). A credential whose deployment has
 * `maxConcurrent` requests in flight is skipped the same way until one ends (`release`).
 *
 * When every credential is cooling down, the one whose cooldown ends first is still used: the breaker moves
 * traffic to healthy credentials, it never refuses a request that has no healthy alternative (a single
 * credential through a vendor's brief outage would otherwise fail every request for the whole cooldown).
 *
 * Hand-written (a few lines of state per credential) rather than a breaker library: the libraries wrap one
 * function per breaker, while this pool needs to choose among credentials and show their state.
 */
export class CredentialPool<T> {
  constructor(
    readonly vendor: VendorName,
    private readonly credentials: readonly PooledCredential<T>[],
    private readonly policy: CircuitBreakerPolicy,
    private readonly metrics: GatewayMetrics = NO_METRICS,
  ) {
    if (credentials.length === 0) throw new Error(`The ${vendor} credential pool is empty.`);
    for (const credential of credentials) metrics.credentialState(vendor, credential.label, false);
  }

  get size(): number {
    return this.credentials.length;
  }

  /**
   * The credential for the next attempt, avoiding those this request already `tried` while an untried one is
   * available: the conversation's own credential when `affinityKey` is given, else the next one round-robin.
   */
  pick(now: number, tried: readonly PooledCredential<T>[] = [], affinityKey?: string): PooledCredential<T> {
    const picked =
      this.credentials.length === 1
        ? this.credentials[0]!
        : ((affinityKey === undefined ? this.nextInTurn(now, tried) : this.pinned(now, tried, affinityKey)) ??
          this.soonestBack(now));
    if (!hasCapacity(picked)) {
      // Every deployment serving the model is full: a 429 as a vendor's own would be (a chain takes its next model).
      throw new GatewayError(
        'upstream_rate_limited',
        'Every deployment serving this model is at its limit of concurrent requests.',
        { retryAfterSeconds: 1 },
      );
    }
    if (!withinRateLimit(picked, now)) {
      // Every credential used its requests of the minute: refused as the vendor's 429 would be (a fallback chain
      // takes its next model), without an upstream call and without blaming a credential.
      const oldest = picked.recentStarts[0] ?? now;
      throw new GatewayError(
        'upstream_rate_limited',
        `Every deployment serving this model is at its requests-per-minute limit.`,
        { retryAfterSeconds: Math.max(1, Math.ceil((oldest + RATE_WINDOW_MS - now) / 1000)) },
      );
    }
    if (picked.rpm !== undefined) picked.recentStarts.push(now);
    if (picked.coolingUntil !== 0 && picked.coolingUntil <= now) picked.probing = true;
    if (picked.load !== undefined) picked.load.inFlight += 1;
    return picked;
  }

  /** The request `pick` gave this credential to is over (answered, failed or its stream ended): frees its slot. */
  release(credential: PooledCredential<T>): void {
    if (credential.load !== undefined) credential.load.inFlight -= 1;
    // A probe that ended without a verdict (the client left, a request the vendor refused): the next one probes.
    credential.probing = false;
  }

  /** A credential is available now when it is not cooling down. */
  hasAlternative(now: number, previous: PooledCredential<T>): boolean {
    return this.credentials.some((credential) => credential !== previous && usable(credential, now));
  }

  /** Counted for the operator view: an attempt and how long the answer took. */
  recordAttempt(credential: PooledCredential<T>, latencyMs: number, failure: string | undefined, now: number): void {
    credential.stats.attempts += 1;
    this.metrics.upstreamAttempt(
      this.vendor,
      credential.label,
      failure ?? 'ok',
      failure === undefined ? latencyMs / 1000 : undefined,
    );
    if (credential.deployment !== undefined)
      this.metrics.deploymentAttempt(
        credential.deployment,
        failure ?? 'ok',
        failure === undefined ? latencyMs / 1000 : undefined,
      );
    if (failure === undefined) {
      credential.stats.successes += 1;
      credential.stats.latencyTotalMs += latencyMs;
    } else {
      credential.stats.failures += 1;
      credential.stats.lastError = { reason: failure, at: now };
    }
  }

  succeeded(credential: PooledCredential<T>): void {
    if (credential.consecutiveFailures === 0) return;
    const wasOpen = credential.coolingUntil !== 0;
    credential.consecutiveFailures = 0;
    credential.coolingUntil = 0;
    credential.openings = 0;
    credential.probing = false;
    if (wasOpen) this.metrics.credentialState(this.vendor, credential.label, false);
  }

  /** Returns true when this failure cooled the credential down. */
  failed(credential: PooledCredential<T>, now: number): boolean {
    credential.consecutiveFailures += 1;
    if (credential.consecutiveFailures < this.policy.failureThreshold) return false;
    const wasOpen = credential.coolingUntil !== 0;
    credential.openings += 1;
    credential.probing = false;
    credential.coolingUntil = now + cooldownAfter(credential.openings, this.policy);
    if (!wasOpen) this.metrics.credentialState(this.vendor, credential.label, true);
    return true;
  }

  status(now: number): CredentialStatus[] {
    return this.credentials.map((credential) => ({
      vendor: this.vendor,
      label: credential.label,
      baseUrl: credential.baseUrl,
      state: credential.coolingUntil === 0 ? 'healthy' : credential.coolingUntil > now ? 'cooling_down' : 'probing',
      coolingDownUntil: credential.coolingUntil > now ? new Date(credential.coolingUntil).toISOString() : undefined,
      recentFailures: credential.consecutiveFailures,
      ...(credential.deployment === undefined ? {} : { deployment: credential.deployment }),
      weight: credential.weight,
      attempts: credential.stats.attempts,
      failures: credential.stats.failures,
      lastError:
        credential.stats.lastError === undefined
          ? undefined
          : { reason: credential.stats.lastError.reason, at: new Date(credential.stats.lastError.at).toISOString() },
      meanLatencyMs:
        credential.stats.successes === 0
          ? undefined
          : Math.round(credential.stats.latencyTotalMs / credential.stats.successes),
    }));
  }

  targets(): T[] {
    return this.credentials.map((credential) => credential.target);
  }

  /**
   * Smooth weighted round-robin over the available credentials (each gains its weight, the one with most credit is
   * taken and pays the total): exact shares over any window of `total` picks, with no randomness to drift from
   * them. One already tried is taken only when no other is available. All weights 1 is plain round-robin.
   */
  private nextInTurn(now: number, tried: readonly PooledCredential<T>[]): PooledCredential<T> | undefined {
    let total = 0;
    let best: PooledCredential<T> | undefined;
    for (const credential of this.credentials) {
      if (!usable(credential, now) || tried.includes(credential)) continue;
      credential.credit += credential.weight;
      total += credential.weight;
      if (best === undefined || credential.credit > best.credit) best = credential;
    }
    if (best !== undefined) {
      best.credit -= total;
      return best;
    }
    return this.credentials.find((credential) => usable(credential, now));
  }

  /**
   * The available credential with the highest rendezvous weight for the key, among those not tried yet when there
   * are any (a retry works down the conversation's own order of credentials).
   */
  private pinned(
    now: number,
    tried: readonly PooledCredential<T>[],
    affinityKey: string,
  ): PooledCredential<T> | undefined {
    let best: PooledCredential<T> | undefined;
    let bestTried: PooledCredential<T> | undefined;
    let bestWeight = Number.NEGATIVE_INFINITY;
    let bestTriedWeight = Number.NEGATIVE_INFINITY;
    for (const credential of this.credentials) {
      if (!usable(credential, now)) continue;
      const weight = weightedScore(rendezvousWeight(affinityKey, credential.seed), credential.weight);
      if (!tried.includes(credential)) {
        if (weight > bestWeight) [best, bestWeight] = [credential, weight];
      } else if (weight > bestTriedWeight) [bestTried, bestTriedWeight] = [credential, weight];
    }
    return best ?? bestTried;
  }

  private soonestBack(now: number): PooledCredential<T> {
    // One within its rate and concurrency limits, if any: a credential over them cannot be used at all.
    const candidates = this.credentials.filter(
      (credential) => withinRateLimit(credential, now) && hasCapacity(credential),
    );
    if (candidates.length === 0) return this.credentials[0]!;
    let soonest = candidates[0]!;
    for (const credential of candidates) if (credential.coolingUntil < soonest.coolingUntil) soonest = credential;
    return soonest;
  }
}

const RATE_WINDOW_MS = 60_000;

/**
 * Not cooling down (nor half open with its probe in flight), and within its requests-per-minute and concurrency
 * limits.
 */
function usable<T>(credential: PooledCredential<T>, now: number): boolean {
  return (
    credential.coolingUntil <= now && !credential.probing && hasCapacity(credential) && withinRateLimit(credential, now)
  );
}

/** Below its deployment's `maxConcurrent` requests in flight (always, without one). */
function hasCapacity<T>(credential: PooledCredential<T>): boolean {
  const load = credential.load;
  return load?.maxConcurrent === undefined || load.inFlight < load.maxConcurrent;
}

/** The n-th cool-down in a row: `cooldownMs`, doubled after each failed probe, never above `maxCooldownMs`. */
export function cooldownAfter(openings: number, policy: CircuitBreakerPolicy): number {
  const ceiling = Math.max(policy.cooldownMs, policy.maxCooldownMs ?? policy.cooldownMs * DEFAULT_BACKOFF_CEILING);
  return Math.min(ceiling, policy.cooldownMs * 2 ** Math.min(30, Math.max(0, openings - 1)));
}

/** Without `maxCooldownMs`, a cool-down grows to at most this many times `cooldownMs`. */
const DEFAULT_BACKOFF_CEILING = 16;

/** Under its `rpm` in the last minute (a sliding window of request starts, pruned as it is read). */
function withinRateLimit<T>(credential: PooledCredential<T>, now: number): boolean {
  if (credential.rpm === undefined) return true;
  const starts = credential.recentStarts;
  while (starts.length > 0 && starts[0]! <= now - RATE_WINDOW_MS) starts.shift();
  return starts.length < credential.rpm;
}

/**
 * Weighted rendezvous hashing: -weight / ln(u) for the key's uniform draw u in (0, 1), so a credential is a
 * conversation's first choice in proportion to its weight. With equal weights the order is the plain hash order.
 */
function weightedScore(hash: number, weight: number): number {
  const uniform = (hash + 0.5) / 4_294_967_296;
  return -weight / Math.log(uniform);
}

/** `seedName` defaults to the label; pass a distinct one when two credentials share a label. */
export function pooledCredential<T>(
  label: string,
  baseUrl: string,
  target: T,
  seedName = label,
  placement: { weight?: number; deployment?: string; rpm?: number; load?: DeploymentLoad } = {},
): PooledCredential<T> {
  return {
    label,
    baseUrl,
    target,
    seed: rendezvousSeed(seedName),
    consecutiveFailures: 0,
    coolingUntil: 0,
    openings: 0,
    probing: false,
    ...(placement.load === undefined ? {} : { load: placement.load }),
    weight: placement.weight ?? 1,
    ...(placement.deployment === undefined ? {} : { deployment: placement.deployment }),
    ...(placement.rpm === undefined ? {} : { rpm: placement.rpm }),
    recentStarts: [],
    credit: 0,
    stats: { attempts: 0, failures: 0, latencyTotalMs: 0, successes: 0 },
  };
}
