/**
 * The usage export's storage (0019-usage-export-cursors) against SQLite and the real PostgreSQL: keyset pages in
 * (created_at, request_id) order across accounts and within one, and the sinks' cursors with their leases.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  fundedAccountIn,
  NOW,
  plainUsage,
  uniqueId,
  type AccountIds,
} from '../../test/helpers/billing-contract-fixture.js';
import { costing } from '../../test/helpers/settlement-pricers.js';
import { postgresBackend, sqliteBackend, type TestDatabase } from '../../test/helpers/storage-backends.js';
import type { Storage } from './types.js';
import type { ExportPosition } from './usage-export-types.js';

describe.each([sqliteBackend, postgresBackend])('usage export storage: $name', (backend) => {
  let database: TestDatabase;
  let storage: Storage;
  let first: AccountIds;
  let second: AccountIds;
  /** Every settled request id, in export order. */
  const settled: { requestId: string; createdAt: number; accountId: string }[] = [];

  beforeAll(async () => {
    database = await backend.createDatabase();
    storage = await database.open();
    await storage.migrate();
    first = await fundedAccountIn(storage, 1_000_000n);
    second = await fundedAccountIn(storage, 1_000_000n);
    // Ties on created_at (three records at NOW + 10) are ordered by request id.
    const times = [NOW + 30, NOW + 10, NOW + 10, NOW + 20, NOW + 10, NOW];
    for (const [index, createdAt] of times.entries()) {
      const ids = index % 2 === 0 ? first : second;
      const requestId = `req-${String(index).padStart(2, '0')}-${uniqueId('x')}`;
      const result = await storage.billing.settle({
        usage: { ...plainUsage(requestId, ids, createdAt), cacheReadTokens: 3, reasoningTokens: 2 },
        price: costing(15n),
        freeAllowanceTokens: 0,
      });
      expect(result.settled).toBe(true);
      settled.push({ requestId, createdAt, accountId: ids.accountId });
    }
    settled.sort((a, b) => a.createdAt - b.createdAt || (a.requestId < b.requestId ? -1 : 1));
  });

  afterAll(async () => {
    await storage?.close();
    await database?.drop();
  });

  it('pages every account in (created_at, request_id) order, each record once', async () => {
    const seen: string[] = [];
    let after: ExportPosition | null = null;
    for (;;) {
      const page = await storage.usageExport.pageAfter(after, NOW + 1_000, 2);
      if (page.length === 0) break;
      seen.push(...page.map((record) => record.requestId));
      const last = page[page.length - 1]!;
      after = { createdAt: last.createdAt, requestId: last.requestId };
    }
    expect(seen).toEqual(settled.map((record) => record.requestId));
    const [one] = await storage.usageExport.pageAfter(null, NOW + 1_000, 1);
    expect(one).toMatchObject({ costNano: 15n, cacheReadTokens: 3, reasoningTokens: 2, inputTokens: 10 });
  });

  it('leaves out records created at or after the bound', async () => {
    const page = await storage.usageExport.pageAfter(null, NOW + 20, 100);
    expect(page.map((record) => record.requestId)).toEqual(
      settled.filter((record) => record.createdAt < NOW + 20).map((record) => record.requestId),
    );
  });

  it("pages one account's records within [from, to)", async () => {
    const range = { from: NOW + 10, to: NOW + 30 };
    const expected = settled
      .filter((record) => record.accountId === first.accountId)
      .filter((record) => record.createdAt >= range.from && record.createdAt < range.to)
      .map((record) => record.requestId);
    const seen: string[] = [];
    let after: ExportPosition | null = null;
    for (;;) {
      const page = await storage.usageExport.accountPage(first.accountId, range, after, 1);
      if (page.length === 0) break;
      seen.push(...page.map((record) => record.requestId));
      after = { createdAt: page[0]!.createdAt, requestId: page[0]!.requestId };
    }
    expect(seen).toEqual(expected);
    expect(seen.length).toBeGreaterThan(0);
  });

  it('gives a sink one lease holder at a time and moves its cursor only for the holder', async () => {
    const sink = uniqueId('sink');
    expect(await storage.usageExport.readCursor(sink)).toBeNull();
    const claimed = await storage.usageExport.claimCursor(sink, 'a', 1_000, 500);
    expect(claimed).toMatchObject({ sink, position: null, exported: 0 });
    // Held by a until 1,500: b waits, a renews.
    expect(await storage.usageExport.claimCursor(sink, 'b', 1_200, 500)).toBeNull();
    expect(await storage.usageExport.claimCursor(sink, 'a', 1_400, 500)).not.toBeNull();
    const to = { createdAt: NOW + 10, requestId: 'req-x' };
    expect(await storage.usageExport.advanceCursor(sink, 'b', to, 3, 1_450)).toBe(false);
    expect(await storage.usageExport.advanceCursor(sink, 'a', to, 3, 1_450)).toBe(true);
    expect(await storage.usageExport.readCursor(sink)).toEqual({ sink, position: to, exported: 3, updatedAt: 1_450 });
    // a's lease (renewed to 1,900) expires: b takes over where a left off, and a can no longer move the cursor.
    const takenOver = await storage.usageExport.claimCursor(sink, 'b', 1_901, 500);
    expect(takenOver).toMatchObject({ position: to, exported: 3 });
    expect(await storage.usageExport.advanceCursor(sink, 'a', { createdAt: NOW + 20, requestId: 'z' }, 1, 1_950)).toBe(
      false,
    );
    // A released lease is free at once.
    await storage.usageExport.releaseCursor(sink, 'b');
    expect(await storage.usageExport.claimCursor(sink, 'c', 1_960, 500)).toMatchObject({ position: to });
  });
});
