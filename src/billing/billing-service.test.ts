import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelCatalog } from '../catalog/model-catalog.js';
import type { AuthenticatedKey } from '../keys/key-service.js';
import type { BillingRepository } from '../storage/billing-types.js';
import { openStorage } from '../storage/open-storage.js';
import type { Storage } from '../storage/types.js';
import { BillingService } from './billing-service.js';
import { parseUsd } from './money.js';

let directory: string;
let storage: Storage;
let auth: AuthenticatedKey;
const model = new ModelCatalog().resolve('beta-5.4');
const usage = { inputTokens: 100, cacheReadTokens: 0, cacheWriteTokens: 0, outputTokens: 50, reasoningTokens: 0 };

beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 'tollgate-billing-'));
  storage = await openStorage(`sqlite:${join(directory, 'db.sqlite')}`);
  await storage.migrate();
  const account = await storage.accounts.create({ id: 'acct_1', email: 'a@example.com', passwordHash: 'x', role: 'user', tier: 'standard', createdAt: 0 });
  const key = await storage.apiKeys.create({ id: 'key_1', accountId: account.id, name: 'k', keyHash: 'h', hint: 'h', createdAt: 0, expiresAt: null });
  auth = { account, key: { ...key } };
  await storage.billing.credit({ accountId: account.id, kind: 'topup', amountNano: parseUsd('1'), idempotencyKey: 'topup-1', note: null, at: 0 });
});

afterAll(async () => {
  await storage?.close();
  rmSync(directory, { recursive: true, force: true });
});

/** A repository whose first settlement commits and then reports a fault, as a dropped connection would. */
function faultAfterCommit(repository: BillingRepository): BillingRepository & { attempts: number } {
  const wrapped = Object.create(repository) as BillingRepository & { attempts: number };
  wrapped.attempts = 0;
  wrapped.settle = async (input) => {
    wrapped.attempts += 1;
    const result = await repository.settle(input);
    if (wrapped.attempts === 1) throw new Error('connection reset after commit');
    return result;
  };
  return wrapped;
}

describe('BillingService', () => {
  it('retries a settlement after a storage fault without charging twice', async () => {
    const repository = faultAfterCommit(storage.billing);
    const billing = new BillingService(repository, { freeTokensPerDay: 0, reservationTtlMs: 60_000 });
    const request = { model: 'beta-5.4', system: [], messages: [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'hi' }] }], sampling: {}, stream: false, extensions: {}, extensionsProtocol: 'openai-chat' as const, maxOutputTokens: 50 };
    await billing.admit('req_retry', auth, model, request);
    const result = await billing.settle({ requestId: 'req_retry', auth, model, usage, status: 'ok', stream: false, startedAt: 0, rawUsage: null });
    expect(repository.attempts).toBe(2);
    expect(result).toEqual({ settled: false, reason: 'already_settled' });
    const cost = 100n * model.prices.input + 50n * model.prices.output;
    expect(await storage.billing.balance('acct_1')).toMatchObject({ balanceNano: parseUsd('1') - cost, reservedNano: 0n });
    expect((await storage.billing.ledger('acct_1', 10)).filter((entry) => entry.kind === 'usage')).toHaveLength(1);
    expect(await storage.usage.listByAccount('acct_1', 10)).toHaveLength(1);
    expect(await storage.billing.verifyLedger()).toEqual([]);
  });

  it('refuses with 403 insufficient_balance when the hold cannot be covered', async () => {
    const billing = new BillingService(storage.billing, { freeTokensPerDay: 0, reservationTtlMs: 60_000 });
    const request = { model: 'beta-5.4', system: [], messages: [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'hi' }] }], sampling: {}, stream: false, extensions: {}, extensionsProtocol: 'openai-chat' as const, maxOutputTokens: 100_000 };
    await expect(billing.admit('req_big', auth, model, request)).rejects.toMatchObject({ status: 403, code: 'insufficient_balance' });
  });
});
