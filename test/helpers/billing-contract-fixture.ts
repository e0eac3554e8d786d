/**
 * The billing contract's set-up, shared by its files (src/storage/billing-*-contract.test.ts): a fresh database of the
 * backend, migrated, opened through `openStorage` exactly as the gateway opens it, so `storage.billing` is the backend's
 * own billing store (sqlite-billing-store.ts, postgres-billing-store.ts) beside the Kysely ledger repository.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll } from 'vitest';
import { planSliceGrant } from '../../src/billing/slice-grant.js';
import type {
  AdmissionPlan,
  AdmissionState,
  HoldCheckpoint,
  ReserveInput,
  SliceInput,
} from '../../src/storage/billing-types.js';
import type { Storage, UsageRecord } from '../../src/storage/types.js';
import type { Backend, TestDatabase } from './storage-backends.js';

export const DAY = 20_000;
export const NOW = DAY * 86_400_000 + 3_600_000;

/** A plain settled request on beta-5.4 (10 in, 5 out) for the given account and key, at `createdAt`. */
export function plainUsage(requestId: string, ids: { accountId: string; keyId: string }, createdAt = NOW): UsageRecord {
  return {
    requestId,
    accountId: ids.accountId,
    apiKeyId: ids.keyId,
    model: 'beta-5.4',
    family: 'beta',
    inputTokens: 10,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    cacheWrite1hTokens: 0,
    outputTokens: 5,
    reasoningTokens: 0,
    status: 'ok',
    stream: false,
    latencyMs: 5,
    createdAt,
    rawUsage: null,
    costNano: 0n,
    freeTokens: 0,
    unbilledNano: 0n,
  };
}
export const uniqueId = (prefix: string): string => `${prefix}-${randomUUID()}`;

/** A request's admission on the test clock, its id fresh; `overrides` sets any other field. */
export function reserveInput(
  ids: { accountId: string; keyId: string },
  plan: (state: AdmissionState) => AdmissionPlan,
  overrides: Partial<ReserveInput> = {},
): ReserveInput {
  return {
    requestId: uniqueId('req'),
    accountId: ids.accountId,
    apiKeyId: ids.keyId,
    day: DAY,
    freeAllowanceTokens: 0,
    createdAt: NOW,
    expiresAt: NOW + 60_000,
    plan,
    ...overrides,
  };
}

/** An admission plan that holds `want` when the account has it available, and refuses otherwise. */
export const holdUpTo =
  (want: bigint, maxOutputTokens = 1) =>
  (state: AdmissionState): AdmissionPlan =>
    state.availableNano >= want
      ? { admitted: true, holdNano: want, freeTokens: 0, maxOutputTokens }
      : { admitted: false, reason: 'short' };

export type AccountIds = { accountId: string; keyId: string };

/** An account with one key and `nano` of credit (none when 0), made through the storage as the gateway makes them. */
export async function fundedAccountIn(storage: Storage, nano: bigint): Promise<AccountIds> {
  const account = await storage.accounts.create({
    id: uniqueId('acct'),
    email: `${uniqueId('u')}@example.com`,
    passwordHash: 'x',
    role: 'user',
    tier: 'standard',
    createdAt: NOW,
  });
  const key = await storage.apiKeys.create({
    id: uniqueId('key'),
    accountId: account.id,
    name: 'k',
    keyHash: uniqueId('h'),
    hint: 'h',
    createdAt: NOW,
    expiresAt: null,
  });
  if (nano > 0n)
    await storage.billing.credit({
      accountId: account.id,
      kind: 'topup',
      amountNano: nano,
      idempotencyKey: uniqueId('topup'),
      note: null,
      at: NOW,
    });
  return { accountId: account.id, keyId: key.id };
}

/** Registers the suite's beforeAll/afterAll; `storage` is there from the first test on. */
export function billingContractFixture(backend: Backend) {
  let database: TestDatabase;
  let storage: Storage;

  beforeAll(async () => {
    database = await backend.createDatabase();
    storage = await database.open();
    await storage.migrate();
  });

  afterAll(async () => {
    await storage?.close();
    await database?.drop();
  });

  const fundedAccount = (nano: bigint) => fundedAccountIn(storage, nano);

  const hold =
    (holdNano: bigint, freeTokens = 0): (() => AdmissionPlan) =>
    () => ({ admitted: true, holdNano, freeTokens, maxOutputTokens: 100 });

  const checkpointOf = (outputTokens: number, at = NOW + 500): HoldCheckpoint => ({
    model: 'beta-5.4',
    family: 'beta',
    stream: true,
    inputTokens: 10,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    cacheWrite1hTokens: 0,
    outputTokens,
    at,
  });

  function sliceInput(
    requestId: string,
    ids: { accountId: string },
    tokens: number,
    overrides: Partial<SliceInput> = {},
  ): SliceInput {
    return {
      requestId,
      accountId: ids.accountId,
      day: DAY,
      freeAllowanceTokens: 0,
      tokens,
      outputPriceNano: 10n,
      plan: (state) => planSliceGrant(tokens, 10n, state),
      expiresAt: NOW + 60_000,
      ...overrides,
    };
  }

  return {
    get storage(): Storage {
      return storage;
    },
    fundedAccount,
    reserveInput,
    hold,
    usageFor: plainUsage,
    checkpointOf,
    sliceInput,
  };
}
