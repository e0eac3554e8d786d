/**
 * The usage export's sinks in the built gateway: a webhook receiver that fails twice and then accepts gets every
 * settled request once per attempt, signed, and nothing more once it accepted; the NDJSON file gets every request
 * too; a gateway restarted while the receiver is down loses nothing; and a sink URL that is not https is refused
 * at start-up with the setting named.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UsageEvent } from '../../src/telemetry/usage-export/usage-event.js';
import { verifySignature } from '../../src/telemetry/webhooks/webhook-signature.js';
import { BUILT_CLI } from '../helpers/cli-path.js';
import { startGatewayProcess } from '../helpers/gateway-process.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';
import { startWebhookReceiver, type ReceivedDelivery, type WebhookReceiver } from '../helpers/webhook-receiver.js';

const SECRET = 'whsec-e2e-usage-export-secret';
const run = promisify(execFile);

const eventsOf = (delivery: ReceivedDelivery) => (JSON.parse(delivery.body) as { data: UsageEvent[] }).data;
const acceptedIds = (receiver: WebhookReceiver) =>
  receiver.received
    .filter((delivery) => delivery.status === 200)
    .flatMap((delivery) => eventsOf(delivery).map((event) => event.request_id));

async function until(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}.`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('usage export sinks', () => {
  let receiver: WebhookReceiver;
  let harness: TestGateway;
  let ndjsonDirectory: string;
  let key: string;
  let accountId: string;

  beforeAll(async () => {
    receiver = await startWebhookReceiver({ statuses: [500, 503, 200] });
    ndjsonDirectory = mkdtempSync(join(tmpdir(), 'tollgate-usage-ndjson-'));
    harness = await startTestGateway({
      env: {
        USAGE_EXPORT_WEBHOOK_URL: receiver.url,
        USAGE_EXPORT_WEBHOOK_SECRET: SECRET,
        USAGE_EXPORT_NDJSON_DIR: ndjsonDirectory,
        WEBHOOK_ALLOW_HTTP_LOOPBACK: 'true',
        USAGE_EXPORT_SETTLE_DELAY_MS: '0',
        USAGE_EXPORT_FLUSH_MS: '200',
        USAGE_EXPORT_BATCH_SIZE: '50',
      },
    });
    ({ key, accountId } = await harness.createAccountWithKey());
  });

  afterAll(async () => {
    await harness?.close();
    await receiver?.close();
    rmSync(ndjsonDirectory, { recursive: true, force: true });
  });

  async function chat(count: number): Promise<void> {
    await Promise.all(
      Array.from({ length: count }, async (_, index) => {
        const response = await fetch(`${harness.openaiBaseUrl}/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'beta-5.4', messages: [{ role: 'user', content: `Hello ${index}` }] }),
        });
        expect(response.status).toBe(200);
        await response.arrayBuffer();
      }),
    );
  }

  async function settledIds(): Promise<string[]> {
    const records = await harness.gateway.storage.usage.listPage(accountId, 10_000);
    return records.map((record) => record.requestId).sort();
  }

  it('delivers every settled request once per attempt, signed, and nothing after it was accepted', async () => {
    await chat(12);
    const settled = await settledIds();
    expect(settled).toHaveLength(12);
    await until(() => acceptedIds(receiver).length >= 12, 'the receiver to accept 12 events');
    // Two failed attempts, then success: the first batch came three times, each time the same events.
    expect(receiver.received.slice(0, 3).map((delivery) => delivery.status)).toEqual([500, 503, 200]);
    expect(eventsOf(receiver.received[1]!)).toEqual(eventsOf(receiver.received[0]!));
    expect(eventsOf(receiver.received[2]!)).toEqual(eventsOf(receiver.received[0]!));
    for (const delivery of receiver.received) {
      expect(verifySignature(String(delivery.headers['tollgate-signature']), delivery.body, SECRET)).toBe(true);
      expect(delivery.headers['idempotency-key']).toMatch(/^usage_batch_[0-9a-f]{32}$/);
    }
    // Each event accepted exactly once; every failed attempt's events were accepted by a later one.
    expect([...acceptedIds(receiver)].sort()).toEqual(settled);
    const event = eventsOf(receiver.received[2]!)[0]!;
    expect(event).toMatchObject({ organisation_id: accountId, model: 'beta-5.4', family: 'beta', status: 'ok' });
    expect(event.route).toBe('/v1/chat/completions');
    expect(BigInt(event.cost_nano_usd)).toBeGreaterThanOrEqual(0n);
    // Nothing is sent again: several flush intervals pass with no delivery.
    const delivered = receiver.received.length;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(receiver.received.length).toBe(delivered);
    // The file sink has them all too, one event per line.
    await until(() => readNdjsonIds().length >= 12, 'the NDJSON file to hold 12 events');
    expect(readNdjsonIds().sort()).toEqual(settled);
    // A failing sink is visible in the metrics.
    const metrics = await (await fetch(`${harness.gateway.url}/metrics`)).text();
    expect(metrics).toMatch(/tollgate_usage_export_events_total\{sink="webhook"\} 12/);
    expect(metrics).toMatch(/tollgate_usage_export_events_total\{sink="ndjson"\} 12/);
    expect(metrics).toMatch(/tollgate_usage_export_lag_seconds\{sink="webhook"\} 0/);
  });

  it('loses nothing when the gateway restarts while the receiver is down', async () => {
    receiver.script([500]);
    const failedBefore = receiver.received.length;
    const settledBefore = (await settledIds()).length;
    await chat(5);
    await until(() => receiver.received.length > failedBefore, 'a failed delivery');
    // Logged once the batch's attempts are spent (its backoff grows to seconds).
    const failed = (line: string) => line.includes('usage export: sink webhook failed');
    await until(
      async () => {
        await harness.flushLogs();
        return harness.logs.some(failed);
      },
      'the failure log line',
      30_000,
    );
    const failureLine = harness.logs.find(failed);
    expect(failureLine).toBeDefined();
    expect(failureLine).not.toContain(SECRET);
    const metrics = await (await fetch(`${harness.gateway.url}/metrics`)).text();
    expect(metrics).toMatch(/tollgate_usage_export_failures_total\{sink="webhook"\} [1-9]/);
    expect(await harness.gateway.close()).toBe(0);
    // The receiver is back; a new process on the same database and sinks picks up where the cursor stands.
    receiver.script([200]);
    const restarted = await startGatewayProcess(harness.env);
    try {
      const settled = await settledIds();
      expect(settled).toHaveLength(settledBefore + 5);
      await until(
        () => new Set(acceptedIds(receiver)).size >= settled.length,
        'every event accepted after the restart',
      );
      const accepted = acceptedIds(receiver);
      expect([...accepted].sort()).toEqual(settled);
      expect(new Set(accepted).size).toBe(accepted.length);
    } finally {
      await restarted.stop();
    }
  });

  function readNdjsonIds(): string[] {
    return readdirSync(ndjsonDirectory).flatMap((file) =>
      readFileSync(join(ndjsonDirectory, file), 'utf8')
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => (JSON.parse(line) as UsageEvent).request_id),
    );
  }
});

describe('a usage export sink that is not https', () => {
  it.each([
    ['http://hooks.example.com/usage', {}],
    ['http://127.0.0.1:9/usage', {}],
    ['https://169.254.169.254/latest', { WEBHOOK_ALLOW_HTTP_LOOPBACK: 'true' }],
  ])('refuses %s at start-up, naming the setting', async (url, extra) => {
    const directory = mkdtempSync(join(tmpdir(), 'tollgate-refusal-'));
    try {
      const failure = await run(process.execPath, [BUILT_CLI, 'serve'], {
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          PORT: '0',
          HOST: '127.0.0.1',
          DATABASE_URL: `sqlite:${join(directory, 'tollgate.db')}`,
          USAGE_EXPORT_WEBHOOK_URL: url,
          USAGE_EXPORT_WEBHOOK_SECRET: SECRET,
          ...extra,
        },
        timeout: 20_000,
      }).then(
        () => undefined,
        (error: { code: number; stdout: string; stderr: string }) => error,
      );
      expect(failure?.code).toBe(1);
      expect(failure?.stdout).not.toContain('Tollgate listening');
      expect(failure?.stderr).toMatch(
        /^tollgate: Invalid configuration:\n {2}- USAGE_EXPORT_WEBHOOK_URL \(usageExportWebhookUrl\): must/,
      );
      expect(failure?.stderr).not.toContain(SECRET);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
