import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fundedKeyIn, postgresBackend, sqliteBackend, type TestDatabase } from '../../test/helpers/storage-backends.js';
import type { CanonicalRequest } from '../canonical/request.js';
import { ModelCatalog } from '../catalog/model-catalog.js';
import type { AuthenticatedKey } from '../keys/key-service.js';
import type { BillingRepository, HoldCheckpoint, HoldRenewal } from '../storage/billing-types.js';
import type { Storage } from '../storage/types.js';
import { BillingService } from './billing-service.js';
import { CHECKPOINT_GROUP_SIZE } from './live-holds.js';
import { parseUsd } from './money.js';

const model = new ModelCatalog().resolve('beta-5.4');
const TTL_MS = 60_000;

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

describe.each([sqliteBackend, postgresBackend])('the periodic batch with many live holds: $name', (backend) => {
  let database: TestDatabase;
  let storage: Storage;
  let owner: AuthenticatedKey;

  beforeAll(async () => {
    database = await backend.createDatabase();
    storage = await database.open();
    await storage.migrate();
    owner = await fundedKeyIn(storage, 'acct_many', parseUsd('1000'));
  });

  afterAll(async () => {
    await storage?.close();
    await database?.drop();
  });

  it('reads and writes them in bounded groups, one event-loop turn each, renewing every hold before its TTL', async () => {
    // Not timed: what one turn may do is counted. An idle loop numbers the event loop's turns; each checkpoint read
    // and each renewal handed to storage is tallied against the turn it ran in.
    let turn = 0;
    let ticking = true;
    const tick = () => {
      turn += 1;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    const readsPerTurn = new Map<number, number>();
    const renewalsPerTurn = new Map<number, number>();
    const calls: HoldRenewal[][] = [];
    let alive = true;
    const repository = Object.create(storage.billing) as BillingRepository;
    repository.renewHolds = (renewals) => {
      // A dead instance writes nothing more.
      if (!alive) return Promise.resolve(new Set<string>());
      calls.push([...renewals]);
      renewalsPerTurn.set(turn, (renewalsPerTurn.get(turn) ?? 0) + renewals.length);
      return storage.billing.renewHolds(renewals);
    };
    let clock = 1_000_000;
    const billing = new BillingService(
      repository,
      { freeTokensPerDay: 0, reservationTtlMs: TTL_MS, checkpointIntervalMs: 20, pricesOf: () => model.prices },
      () => clock,
    );
    // Two groups and a part: every other stream has delivered output, the rest only need their holds renewed.
    const holds = 2 * CHECKPOINT_GROUP_SIZE + 17;
    const output = new Map<string, number>();
    const admit = async (index: number) => {
      const requestId = `req_many_${index}`;
      await billing.admit(requestId, owner, model, request);
      output.set(requestId, index % 2 === 0 ? 30 : 0);
      billing.track(requestId, (): HoldCheckpoint | undefined => {
        readsPerTurn.set(turn, (readsPerTurn.get(turn) ?? 0) + 1);
        const tokens = output.get(requestId)!;
        if (tokens === 0) return undefined;
        return {
          model: model.id,
          family: model.family,
          stream: true,
          inputTokens: 12,
          cacheReadTokens: 0,
          cacheWriteTokens: 0,
          cacheWrite1hTokens: 0,
          outputTokens: tokens,
          at: clock,
        };
      });
    };
    // Admitted 64 at a time: sequential admissions on PostgreSQL would take most of the test's time.
    for (let first = 0; first < holds; first += 64)
      await Promise.all(Array.from({ length: Math.min(64, holds - first) }, (_, offset) => admit(first + offset)));
    const withOutput = [...output.values()].filter((tokens) => tokens > 0).length;

    // Past one interval, and past a third of the TTL: every hold needs its renewal, half of them a checkpoint.
    clock += TTL_MS / 2;
    const renewed = () => new Set(calls.flat().map((renewal) => renewal.requestId));
    // Bounded by the test's own timeout: ticks run every 20 ms.
    while (renewed().size < holds) await new Promise((resolve) => setTimeout(resolve, 20));
    ticking = false;

    expect(Math.max(...calls.map((call) => call.length))).toBeLessThanOrEqual(CHECKPOINT_GROUP_SIZE);
    expect(calls.length).toBeGreaterThanOrEqual(Math.ceil(holds / CHECKPOINT_GROUP_SIZE));
    expect(Math.max(...readsPerTurn.values())).toBeLessThanOrEqual(CHECKPOINT_GROUP_SIZE);
    expect(Math.max(...renewalsPerTurn.values())).toBeLessThanOrEqual(CHECKPOINT_GROUP_SIZE);
    for (const renewal of calls.flat()) expect(renewal.expiresAt).toBeGreaterThanOrEqual(clock + TTL_MS);
    // Past every hold's first expiry: renewed, none is swept.
    clock += TTL_MS / 2 + 1;
    expect(await billing.sweepExpired()).toMatchObject({ released: 0, settled: 0 });

    // The instance dies; past the TTL the sweeper bills each stream at the checkpoint its group wrote and releases
    // the rest.
    alive = false;
    clock += TTL_MS + 1;
    const swept = { released: 0, settled: 0 };
    for (;;) {
      const result = await billing.sweepExpired();
      if (result.released + result.settled === 0) break;
      swept.released += result.released;
      swept.settled += result.settled;
    }
    expect(swept).toEqual({ released: holds - withOutput, settled: withOutput });
    expect(await storage.billing.balance(owner.organisation.id)).toMatchObject({
      reservedNano: 0n,
      balanceNano: parseUsd('1000') - BigInt(withOutput) * (12n * model.prices.input + 30n * model.prices.output),
    });
    expect(await storage.billing.verifyLedger()).toEqual([]);
  }, 120_000);
});
