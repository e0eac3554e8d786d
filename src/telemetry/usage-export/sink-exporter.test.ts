/**
 * The exporter over a real SQLite store and a real loopback receiver: batches, the cursor moved only past accepted
 * batches, a failing receiver retried and then left alone, a restart resuming where the cursor stands, and the
 * NDJSON file sink's daily files.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  fundedAccountIn,
  NOW,
  plainUsage,
  uniqueId,
  type AccountIds,
} from '../../../test/helpers/billing-contract-fixture.js';
import { costing } from '../../../test/helpers/settlement-pricers.js';
import { sqliteBackend, type TestDatabase } from '../../../test/helpers/storage-backends.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../../test/helpers/webhook-receiver.js';
import type { Storage } from '../../storage/types.js';
import { WebhookSender } from '../webhooks/webhook-sender.js';
import { verifySignature } from '../webhooks/webhook-signature.js';
import { UsageExportMetrics } from './export-metrics.js';
import { NdjsonFileSink } from './ndjson-file-sink.js';
import { SinkExporter } from './sink-exporter.js';
import type { UsageEvent } from './usage-event.js';
import type { UsageSink } from './usage-sink.js';
import { WebhookUsageSink } from './webhook-usage-sink.js';

const SECRET = 'whsec-sink-exporter-test';

describe('SinkExporter', () => {
  let database: TestDatabase;
  let storage: Storage;
  let ids: AccountIds;
  let receiver: WebhookReceiver;
  let sender: WebhookSender;
  let directory: string;
  const failures: string[] = [];

  beforeAll(async () => {
    database = await sqliteBackend.createDatabase();
    storage = await database.open();
    await storage.migrate();
    ids = await fundedAccountIn(storage, 1_000_000n);
    receiver = await startWebhookReceiver();
    sender = new WebhookSender({
      policy: { allowHttpLoopback: true },
      maxAttempts: 4,
      baseDelayMs: 10,
      maxDelayMs: 50,
      timeoutMs: 2_000,
      concurrency: 1,
    });
    directory = mkdtempSync(join(tmpdir(), 'tollgate-ndjson-'));
  });

  afterAll(async () => {
    await sender?.close();
    await receiver?.close();
    await storage?.close();
    await database?.drop();
    rmSync(directory, { recursive: true, force: true });
  });

  async function settle(count: number, createdAt: number): Promise<string[]> {
    const requestIds: string[] = [];
    for (let index = 0; index < count; index += 1) {
      const requestId = uniqueId('req');
      await storage.billing.settle({
        usage: plainUsage(requestId, ids, createdAt + index),
        price: costing(7n),
        freeAllowanceTokens: 0,
      });
      requestIds.push(requestId);
    }
    return requestIds;
  }

  function exporter(sink: UsageSink, owner: string, clock: () => number, registry = new Registry()) {
    return new SinkExporter({
      sink,
      store: storage.usageExport,
      owner,
      batchSize: 4,
      flushIntervalMs: 60_000,
      settleDelayMs: 1_000,
      metrics: new UsageExportMetrics(registry),
      onFailure: (_sink, message) => failures.push(message),
      onStoreError: (_sink, error) => failures.push(String(error)),
      now: clock,
    });
  }

  const eventsOf = (body: string) => (JSON.parse(body) as { data: UsageEvent[] }).data;

  it('delivers in signed batches, retrying a failing receiver, and sends nothing again after success', async () => {
    const sink = uniqueId('hook');
    const settled = await settle(6, NOW);
    // Two records inside the settle delay wait for a later flush.
    const young = await settle(2, NOW + 10_000);
    const clock = () => NOW + 10_500;
    receiver.script([500, 503, 200]);
    const before = receiver.received.length;
    const registry = new Registry();
    const first = exporter(
      new WebhookUsageSink(sink, { url: receiver.url, secret: SECRET }, sender),
      'a',
      clock,
      registry,
    );
    expect(await first.flush()).toBe(6);
    const deliveries = receiver.received.slice(before);
    // Batch one failed twice then was accepted (three attempts with the same 4 events), batch two went at once.
    expect(deliveries.map((delivery) => delivery.status)).toEqual([500, 503, 200, 200]);
    expect(deliveries.map((delivery) => eventsOf(delivery.body).length)).toEqual([4, 4, 4, 2]);
    for (const delivery of deliveries) {
      expect(verifySignature(String(delivery.headers['tollgate-signature']), delivery.body, SECRET)).toBe(true);
      expect(delivery.headers['idempotency-key']).toBe((JSON.parse(delivery.body) as { id: string }).id);
    }
    const accepted = deliveries
      .filter((delivery) => delivery.status === 200)
      .flatMap((delivery) => eventsOf(delivery.body));
    expect(accepted.map((event) => event.request_id)).toEqual(settled);
    expect(accepted[0]).toMatchObject({
      object: 'usage_event',
      organisation_id: ids.accountId,
      api_key_id: ids.keyId,
      model: 'beta-5.4',
      input_tokens: 10,
      output_tokens: 5,
      cost_nano_usd: '7',
      cost_usd: '0.000000007',
      status: 'ok',
    });
    // Nothing new: another flush sends nothing.
    expect(await first.flush()).toBe(0);
    expect(receiver.received.length).toBe(before + 4);
    expect((await storage.usageExport.readCursor(sink))?.exported).toBe(6);
    const metrics = await registry.getMetricsAsJSON();
    const lag = metrics.find((metric) => metric.name === 'tollgate_usage_export_lag_seconds');
    expect(lag?.values[0]?.value).toBeCloseTo(0.5, 1);
    // A restart (a new instance after this one let go) resumes at the cursor: only the young records follow.
    await first.stop();
    const later = () => NOW + 20_000;
    const second = exporter(new WebhookUsageSink(sink, { url: receiver.url, secret: SECRET }, sender), 'b', later);
    expect(await second.flush()).toBe(2);
    expect(eventsOf(receiver.received.at(-1)!.body).map((event) => event.request_id)).toEqual(young);
    await second.stop();
  });

  it('keeps the cursor where it was while the receiver keeps failing, and counts the failures', async () => {
    const sink = uniqueId('down');
    await settle(3, NOW + 30_000);
    const clock = () => NOW + 40_000;
    receiver.script([500]);
    const registry = new Registry();
    const failing = exporter(
      new WebhookUsageSink(sink, { url: receiver.url, secret: SECRET }, sender),
      'a',
      clock,
      registry,
    );
    failures.length = 0;
    expect(await failing.flush()).toBe(0);
    expect(failures).toEqual(['the receiver answered 500 (after 4 attempts)']);
    expect(await storage.usageExport.readCursor(sink)).toMatchObject({ position: null, exported: 0 });
    const metrics = await registry.getMetricsAsJSON();
    expect(metrics.find((metric) => metric.name === 'tollgate_usage_export_failures_total')?.values[0]?.value).toBe(1);
    receiver.script([200]);
    // Every record so far (the first test's ones too: a new sink starts at the oldest record).
    expect(await failing.flush()).toBe(11);
    await failing.stop();
  });

  it('appends one event per line to a file per UTC day', async () => {
    const sink = uniqueId('file');
    let clock = NOW + 60_000;
    const fileSink = new NdjsonFileSink(sink, directory, () => clock);
    const first = exporter(fileSink, 'a', () => clock);
    expect(await first.flush()).toBe(11);
    const added = await settle(2, NOW + 61_000);
    clock = NOW + 86_400_000;
    expect(await first.flush()).toBe(2);
    await first.stop();
    await fileSink.close();
    const files = readdirSync(directory).sort();
    expect(files).toEqual([
      `usage-${new Date(NOW + 60_000).toISOString().slice(0, 10)}.ndjson`,
      `usage-${new Date(NOW + 86_400_000).toISOString().slice(0, 10)}.ndjson`,
    ]);
    const lines = files.map((file) => readFileSync(join(directory, file), 'utf8').trimEnd().split('\n'));
    expect(lines.map((day) => day.length)).toEqual([11, 2]);
    expect(lines[1]!.map((line) => (JSON.parse(line) as UsageEvent).request_id)).toEqual(added);
  });
});
