/**
 * The WAL checkpoint thread (wal-checkpointer.ts): committed pages reach the database file without the serving
 * connection checkpointing (its own automatic checkpoint is pushed far out), and closing checkpoints the rest.
 */
import { randomUUID } from 'node:crypto';
import { statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, expect, it } from 'vitest';
import { openSqliteStorage } from './open-sqlite-storage.js';
import { CHECKPOINT_INTERVAL_MS } from './wal-checkpointer.js';

let directory: string | undefined;

afterEach(async () => {
  if (directory !== undefined) await rm(directory, { recursive: true, force: true });
});

it('copies committed pages into the database file from its own thread, and checkpoints the rest on close', async () => {
  directory = await mkdtemp(join(tmpdir(), 'tollgate-wal-'));
  const file = join(directory, 'gateway.db');
  const errors: Error[] = [];
  const storage = await openSqliteStorage(file, (error) => errors.push(error));
  await storage.migrate();
  await sleep(CHECKPOINT_INTERVAL_MS * 3);
  const before = statSync(file).size;
  const account = await storage.accounts.create({ id: randomUUID(), email: `${randomUUID()}@example.com`, passwordHash: 'x', role: 'user', tier: 'standard', createdAt: 1 });
  const key = await storage.apiKeys.create({ id: randomUUID(), accountId: account.id, name: 'k', keyHash: randomUUID(), hint: 'h', createdAt: 1, expiresAt: null });
  // Far below the serving connection's automatic checkpoint (10,000 pages), so only the thread can move them.
  for (let batch = 0; batch < 20; batch += 1) {
    await Promise.all(
      Array.from({ length: 50 }, () =>
        storage.billing.settle({
          usage: {
            requestId: randomUUID(), accountId: account.id, apiKeyId: key.id, model: 'beta-5.4', family: 'beta', inputTokens: 1, cacheReadTokens: 0,
            cacheWriteTokens: 0, outputTokens: 1, reasoningTokens: 0, status: 'ok', stream: false, latencyMs: 1, createdAt: 1, rawUsage: 'x'.repeat(200),
            costNano: 0n, freeTokens: 0, unbilledNano: 0n,
          },
          price: () => ({ chargeNano: 0n, freeTokensUsed: 0 }),
        }),
      ),
    );
  }
  await sleep(CHECKPOINT_INTERVAL_MS * 4);
  const checkpointed = statSync(file).size;
  expect(checkpointed).toBeGreaterThan(before + 100_000);
  await storage.close();
  expect(errors).toEqual([]);
  // Reopened, every row is there.
  const reopened = await openSqliteStorage(file);
  expect(await reopened.usage.listByAccount(account.id, 2_000)).toHaveLength(1_000);
  await reopened.close();
});
