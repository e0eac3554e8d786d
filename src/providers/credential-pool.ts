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
 * which one request probes it: a success closes the circuit, a failure opens it again at once.
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
    return picked;
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
    if (wasOpen) this.metrics.credentialState(this.vendor, credential.label, false);
  }

  /** Returns true when this failure cooled the credential down. */
  failed(credential: PooledCredential<T>, now: number): boolean {
    credential.consecutiveFailures += 1;
    if (credential.consecutiveFailures < this.policy.failureThreshold) return false;
    const wasOpen = credential.coolingUntil !== 0;
    credential.coolingUntil = now + this.policy.cooldownMs;
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
    // One within its rate limit, if any: a credential over it cannot be used at all.
    const candidates = this.credentials.filter((credential) => withinRateLimit(credential, now));
    if (candidates.length === 0) return this.credentials[0]!;
    let soonest = candidates[0]!;
    for (const credential of candidates) if (credential.coolingUntil < soonest.coolingUntil) soonest = credential;
    return soonest;
  }
}

const RATE_WINDOW_MS = 60_000;

/** Not cooling down, and within its requests-per-minute limit. */
function usable<T>(credential: PooledCredential<T>, now: number): boolean {
  return credential.coolingUntil <= now && withinRateLimit(credential, now);
}

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
  placement: { weight?: number; deployment?: string; rpm?: number } = {},
): PooledCredential<T> {
  return {
    label,
    baseUrl,
    target,
    seed: rendezvousSeed(seedName),
    consecutiveFailures: 0,
    coolingUntil: 0,
    weight: placement.weight ?? 1,
    ...(placement.deployment === undefined ? {} : { deployment: placement.deployment }),
    ...(placement.rpm === undefined ? {} : { rpm: placement.rpm }),
    recentStarts: [],
    credit: 0,
    stats: { attempts: 0, failures: 0, latencyTotalMs: 0, successes: 0 },
  };
}
