import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { DeploymentCircuit, DeploymentHealth } from './gateway-metrics.js';

const CIRCUIT_STATES: readonly DeploymentCircuit[] = ['closed', 'open', 'half_open'];

/**
 * The operator's deployments on `/metrics`: attempts, failures and answer latency as they happen, requests in flight
 * and the circuit's state read from the live pool at scrape time (a cool-down ends without any event to count).
 * Label values are the configuration's deployment names: bounded.
 */
export class DeploymentSeries {
  private readonly requests: Counter<'deployment'>;
  private readonly failures: Counter<'deployment' | 'reason'>;
  private readonly latency: Histogram<'deployment'>;

  constructor(registers: Registry[], live: (() => readonly DeploymentHealth[]) | undefined) {
    this.requests = new Counter({
      name: 'tollgate_deployment_requests_total',
      help: 'Upstream attempts sent to each deployment (retries and fallbacks each count).',
      labelNames: ['deployment'],
      registers,
    });
    this.failures = new Counter({
      name: 'tollgate_deployment_failures_total',
      help: 'Failed upstream attempts of each deployment, by reason (connect, timeout, status_503, …).',
      labelNames: ['deployment', 'reason'],
      registers,
    });
    this.latency = new Histogram({
      name: 'tollgate_deployment_answer_seconds',
      help: "Seconds from sending an attempt to a deployment to its answer (a stream's first output).",
      labelNames: ['deployment'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    });
    if (live === undefined) return;
    new Gauge({
      name: 'tollgate_deployment_in_flight',
      help: 'Upstream requests in flight to each deployment on this instance (streams until their last event).',
      labelNames: ['deployment'],
      registers,
      collect() {
        this.reset();
        for (const health of live()) this.set({ deployment: health.deployment }, health.inFlight);
      },
    });
    new Gauge({
      name: 'tollgate_deployment_circuit_state',
      help: "Each deployment's circuit: 1 on its current state (closed, open, half_open: a probe may go through).",
      labelNames: ['deployment', 'state'],
      registers,
      collect() {
        this.reset();
        for (const health of live())
          for (const state of CIRCUIT_STATES)
            this.set({ deployment: health.deployment, state }, health.state === state ? 1 : 0);
      },
    });
  }

  attempt(deployment: string, outcome: string, seconds: number | undefined): void {
    this.requests.inc({ deployment });
    if (outcome !== 'ok') this.failures.inc({ deployment, reason: outcome });
    if (seconds !== undefined) this.latency.observe({ deployment }, seconds);
  }
}
