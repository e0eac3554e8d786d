/**
 * The periodic checkpoint batch with thousands of live streams, in-process on a real SQLite store: the longest
 * event-loop turn while one batch runs, and where its time goes (the tokenizer's counts, the store's calls).
 *
 *   node dist/bench/checkpoint-batch.js 1000 5000 10000
 *
 * Each stream is admitted through the billing service and tracked as the pipeline tracks it: an output gate metering
 * by bytes, with three stamped deltas (one a second, one 3 s interval) pending its next exact count. Timed figures:
 * read them against another build run the same way on the same machine.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { BillingService } from '../src/billing/billing-service.js';
import { parseUsd } from '../src/billing/money.js';
import { loadTokenizer } from '../src/canonical/count-tokens.js';
import type { CanonicalRequest } from '../src/canonical/request.js';
import { ModelCatalog } from '../src/catalog/model-catalog.js';
import type { AuthenticatedKey } from '../src/keys/key-service.js';
import { OutputGate } from '../src/pipeline/output-gate.js';
import type { BillingRepository, HoldCheckpoint } from '../src/storage/billing-types.js';
import { openStorage } from '../src/storage/open-storage.js';

const INTERVAL_MS = 3_000;
const BATCHES = 3;

export interface BatchFigures {
  holds: number;
  /** The longest gap between two turns of an idle loop while the batch ran, ms; and the main thread's CPU in it. */
  longestTurnMs: number;
  longestTurnCpuMs: number;
  /** Wall time from the batch's first checkpoint read to its last write's end, ms. */
  batchMs: number;
  /** Summed time of the checkpoints' reads (the tokenizer's counts), ms. */
  tokenizerMs: number;
  /** Summed synchronous time of the store's calls, and how long until their writes resolved, ms. */
  storeCallMs: number;
  storeWaitMs: number;
  storeCalls: number;
  largestCall: number;
}

/** The main thread's CPU time (user + system), ms: less moved than wall time by other processes on the machine. */
function threadCpuMs(): number {
  const { user, system } = process.threadCpuUsage();
  return (user + system) / 1000;
}

export async function measureCheckpointBatch(holds: number): Promise<BatchFigures[]> {
  const directory = mkdtempSync(join(tmpdir(), 'tollgate-checkpoint-batch-'));
  const storage = await openStorage(`sqlite:${join(directory, 'db.sqlite')}`);
  try {
    await storage.migrate();
    await loadTokenizer();
    const account = await storage.accounts.create({
      id: 'acct_batch',
      email: 'batch@example.com',
      passwordHash: 'x',
      role: 'user',
      tier: 'standard',
      createdAt: 0,
    });
    const key = await storage.apiKeys.create({
      id: 'key_batch',
      accountId: account.id,
      name: 'k',
      keyHash: 'h',
      hint: 'h',
      createdAt: 0,
      expiresAt: null,
    });
    await storage.billing.credit({
      accountId: account.id,
      kind: 'topup',
      amountNano: parseUsd('1000000'),
      idempotencyKey: 'topup-batch',
      note: null,
      at: 0,
    });
    const auth: AuthenticatedKey = {
      organisation: { id: account.id, name: 'Personal', tier: account.tier, disabled: false },
      project: { id: key.projectId, models: null, archivedAt: null },
      key: { ...key },
    };
    const model = new ModelCatalog().resolve('beta-5.4');
    const request: CanonicalRequest = {
      model: 'beta-5.4',
      system: [],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Tell me a long story.' }] }],
      maxOutputTokens: 1_000,
      sampling: {},
      stream: true,
      extensions: {},
      extensionsProtocol: 'openai-chat',
    };

    let offset = 0;
    const now = () => Date.now() + offset;
    const calls: Array<{ size: number; callMs: number; waitMs: number; endedAt: number }> = [];
    let tokenizerMs = 0;
    let firstRead = 0;
    const repository = Object.create(storage.billing) as BillingRepository;
    repository.renewHolds = async (renewals) => {
      const started = performance.now();
      const written = storage.billing.renewHolds(renewals);
      const called = performance.now();
      const gone = await written;
      const ended = performance.now();
      calls.push({ size: renewals.length, callMs: called - started, waitMs: ended - called, endedAt: ended });
      return gone;
    };
    const billing = new BillingService(
      repository,
      { freeTokensPerDay: 0, reservationTtlMs: 15 * 60_000, checkpointIntervalMs: INTERVAL_MS },
      now,
    );
    const gates: OutputGate[] = [];
    for (let index = 0; index < holds; index++) {
      const requestId = `req_batch_${index}`;
      await billing.admit(requestId, auth, model, request);
      const gate = new OutputGate(
        () => 1_000_000,
        1_000_000,
        1_000,
        async () => 0,
      );
      gates.push(gate);
      billing.track(requestId, (): HoldCheckpoint | undefined => {
        const started = performance.now();
        if (firstRead === 0) firstRead = started;
        const outputTokens = gate.deliveredTokens();
        tokenizerMs += performance.now() - started;
        return {
          model: model.id,
          family: model.family,
          stream: true,
          inputTokens: 12,
          cacheReadTokens: 0,
          cacheWriteTokens: 0,
          cacheWrite1hTokens: 0,
          outputTokens,
          at: now(),
        };
      });
    }

    const figures: BatchFigures[] = [];
    for (let batch = 0; batch < BATCHES; batch++) {
      // One interval of output per stream: three stamped deltas, one a second.
      for (const gate of gates)
        for (let second = 0; second < 3; second++)
          gate.pass({ type: 'text-delta', index: 0, text: ` t=${Date.now() + second * 1000}` } as never);
      calls.length = 0;
      tokenizerMs = 0;
      firstRead = 0;
      offset += INTERVAL_MS + 100;
      // An idle loop's turns: the longest gap between two is the longest turn anything else ran.
      let longestTurnMs = 0;
      let longestTurnCpuMs = 0;
      let last = performance.now();
      let lastCpu = threadCpuMs();
      let sampling = true;
      const sample = () => {
        const at = performance.now();
        const cpu = threadCpuMs();
        longestTurnMs = Math.max(longestTurnMs, at - last);
        longestTurnCpuMs = Math.max(longestTurnCpuMs, cpu - lastCpu);
        last = at;
        lastCpu = cpu;
        if (sampling) setImmediate(sample);
      };
      setImmediate(sample);
      const written = () => calls.reduce((sum, call) => sum + call.size, 0);
      while (written() < holds) await new Promise((resolve) => setTimeout(resolve, 5));
      sampling = false;
      await new Promise((resolve) => setImmediate(resolve));
      figures.push({
        holds,
        longestTurnMs,
        longestTurnCpuMs,
        batchMs: Math.max(...calls.map((call) => call.endedAt)) - firstRead,
        tokenizerMs,
        storeCallMs: calls.reduce((sum, call) => sum + call.callMs, 0),
        storeWaitMs: calls.reduce((sum, call) => sum + call.waitMs, 0),
        storeCalls: calls.length,
        largestCall: Math.max(...calls.map((call) => call.size)),
      });
    }
    return figures;
  } finally {
    await storage.close();
    rmSync(directory, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const sizes = process.argv.slice(2).map(Number);
  for (const holds of sizes.length > 0 ? sizes : [1_000, 5_000, 10_000]) {
    for (const figure of await measureCheckpointBatch(holds)) {
      const ms = (value: number) => `${value.toFixed(1)} ms`;
      console.log(
        `${holds} holds: longest turn ${ms(figure.longestTurnMs)} (CPU ${ms(figure.longestTurnCpuMs)}), batch ${ms(figure.batchMs)}, tokenizer ` +
          `${ms(figure.tokenizerMs)}, store calls ${figure.storeCalls} (largest ${figure.largestCall}) ` +
          `${ms(figure.storeCallMs)} + ${ms(figure.storeWaitMs)} until written`,
      );
    }
  }
  process.exit(0);
}
