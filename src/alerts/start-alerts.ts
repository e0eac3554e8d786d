import type { Mailer } from '../identity/mailer.js';
import { randomHex } from '../ids/random-hex.js';
import type { AlertRepository } from '../storage/alert-types.js';
import type { OrganisationRepository } from '../storage/organisation-types.js';
import type { SpendLimitRepository } from '../storage/spend-limit-types.js';
import { WebhookSender } from '../telemetry/webhooks/webhook-sender.js';
import { AlertDeliveryWorker, type DeliveryRetryPolicy } from './alert-delivery-worker.js';
import { AlertEvaluator } from './alert-evaluator.js';

export interface AlertSettings {
  /** Every rule is evaluated this often (money that moved on another instance, a credit from the CLI). */
  evaluateIntervalMs: number;
  /** An organisation named by `nudge` is evaluated this long after, with any others named meanwhile. */
  nudgeDelayMs: number;
  /** Due deliveries are looked for this often. */
  deliveryPollMs: number;
  retry: DeliveryRetryPolicy;
  /** Per webhook attempt: connecting, the answer's headers and its body each within this long. */
  webhookTimeoutMs: number;
  /** http:// receivers on loopback (testing only), as for the usage export's webhooks. */
  allowHttpLoopback: boolean;
}

export const DEFAULT_ALERT_SETTINGS: Omit<AlertSettings, 'allowHttpLoopback'> = {
  evaluateIntervalMs: 30_000,
  nudgeDelayMs: 250,
  deliveryPollMs: 2_000,
  retry: { maxAttempts: 10, baseDelayMs: 5_000, maxDelayMs: 30 * 60_000 },
  webhookTimeoutMs: 10_000,
};

export interface AlertLog {
  warn(details: Record<string, unknown>, message: string): void;
  error(details: Record<string, unknown>, message: string): void;
}

export interface RunningAlerts {
  /** Money of this organisation moved (a settlement, a top-up): evaluate its rules soon, off the caller's path. */
  nudge(organisationId: string): void;
  /** A rule of this organisation was created or changed on this instance: evaluate its rules soon. */
  ruleChanged(organisationId: string): void;
  /** Evaluates every rule and sends what is due now (tests, and each interval). */
  runNow(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Starts the alerts: an evaluator run every interval and shortly after each nudge, and the delivery worker polling
 * the persisted queue. Nothing here runs on a request's path: `nudge` only notes the organisation.
 */
export function startAlerts(
  settings: AlertSettings,
  deps: {
    alerts: AlertRepository;
    limits: Pick<SpendLimitRepository, 'list'>;
    organisations: OrganisationRepository;
    mailer: Mailer | undefined;
    log: AlertLog;
    now: () => number;
    /** Certificate authorities for the webhook connections (tests' self-signed receivers). */
    ca?: string;
  },
): RunningAlerts {
  const evaluator = new AlertEvaluator(deps.alerts, deps.limits, {
    mailConfigured: deps.mailer !== undefined,
    now: deps.now,
  });
  const sender = new WebhookSender({
    policy: { allowHttpLoopback: settings.allowHttpLoopback },
    maxAttempts: 1,
    baseDelayMs: 0,
    maxDelayMs: 0,
    timeoutMs: settings.webhookTimeoutMs,
    concurrency: 4,
    ...(deps.ca === undefined ? {} : { ca: deps.ca }),
  });
  const worker = new AlertDeliveryWorker({
    alerts: deps.alerts,
    organisations: deps.organisations,
    sender,
    mailer: deps.mailer,
    owner: `instance-${randomHex(8)}`,
    retry: settings.retry,
    leaseMs: Math.max(60_000, settings.webhookTimeoutMs * 3),
    now: deps.now,
    // The message names the receiver's answer or the network error; never the URL's query, the secret or a body.
    onFailure: (delivery, error) =>
      deps.log.warn(
        { delivery: delivery.id, rule: delivery.ruleId, channel: delivery.channel, reason: error },
        'alert delivery failed',
      ),
  });

  let closed = false;
  const nudged = new Set<string>();
  let nudgeTimer: NodeJS.Timeout | undefined;
  /*
   * The organisations known to have rules, from the last evaluation of every rule (at start and each interval) and
   * the ones since; undefined until the first. A settlement of any other organisation nudges nothing: most have no
   * rules, and each evaluation is a database round trip. A rule created on another instance is seen here at the
   * next interval at the latest, and that instance evaluates it meanwhile.
   */
  let withRules: Set<string> | undefined;
  const learn = (organisationIds: string[] | null, found: Set<string>): void => {
    if (organisationIds === null) {
      withRules = found;
      return;
    }
    for (const id of organisationIds) {
      if (found.has(id)) withRules?.add(id);
      else withRules?.delete(id);
    }
  };
  // One evaluation and one delivery run at a time in this instance; the database orders instances.
  let evaluating: Promise<void> = Promise.resolve();
  let delivering: Promise<void> = Promise.resolve();

  const evaluate = (organisationIds: string[] | null): Promise<void> => {
    evaluating = evaluating
      .then(() => evaluator.evaluate(organisationIds))
      .then(
        (result) => {
          learn(organisationIds, result.organisationsWithRules);
          if (result.fired > 0) deliver();
        },
        (error: unknown) => deps.log.error({ err: error }, 'alert evaluation failed'),
      );
    return evaluating;
  };
  const deliver = (): Promise<void> => {
    delivering = delivering
      .then(() => worker.runDue())
      .then(
        () => undefined,
        (error: unknown) => deps.log.error({ err: error }, 'alert deliveries could not be read or stored'),
      );
    return delivering;
  };

  const evaluateTimer = setInterval(() => void evaluate(null), settings.evaluateIntervalMs);
  evaluateTimer.unref();
  const deliveryTimer = setInterval(() => void deliver(), settings.deliveryPollMs);
  deliveryTimer.unref();

  void evaluate(null);

  const schedule = (organisationId: string): void => {
    if (closed) return;
    nudged.add(organisationId);
    if (nudgeTimer !== undefined) return;
    nudgeTimer = setTimeout(() => {
      nudgeTimer = undefined;
      const organisationIds = [...nudged];
      nudged.clear();
      void evaluate(organisationIds);
    }, settings.nudgeDelayMs);
    nudgeTimer.unref();
  };

  return {
    nudge(organisationId) {
      if (withRules === undefined || withRules.has(organisationId)) schedule(organisationId);
    },
    ruleChanged(organisationId) {
      withRules?.add(organisationId);
      schedule(organisationId);
    },
    async runNow() {
      await evaluate(null);
      await deliver();
    },
    async close() {
      closed = true;
      clearInterval(evaluateTimer);
      clearInterval(deliveryTimer);
      clearTimeout(nudgeTimer);
      await sender.close();
      await Promise.all([evaluating, delivering]);
    },
  };
}
