import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { estimateRequestInputTokens, upperBoundRequestInputTokens } from '../canonical/count-tokens.js';
import type { CanonicalRequest } from '../canonical/request.js';
import { ModelCatalog } from '../catalog/model-catalog.js';
import { outputSliceOf } from './priced-model.js';
import type { AuthenticatedKey } from '../keys/key-service.js';
import type { BillingRepository } from '../storage/billing-types.js';
import { openStorage } from '../storage/open-storage.js';
import type { Storage } from '../storage/types.js';
import { fundedKeyIn } from '../../test/helpers/storage-backends.js';
import { inputPrice, planAdmission } from './admission.js';
import { calibratedTokens, InputCalibration, WARM_UP_SAMPLES } from './input-calibration.js';
import { BillingService } from './billing-service.js';
import { parseUsd } from './money.js';

let directory: string;
let storage: Storage;
let auth: AuthenticatedKey;
const model = new ModelCatalog().resolve('beta-5.4');
const usage = {
  inputTokens: 100,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  cacheWrite1hTokens: 0,
  outputTokens: 50,
  reasoningTokens: 0,
};

beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 'tollgate-billing-'));
  storage = await openStorage(`sqlite:${join(directory, 'db.sqlite')}`);
  await storage.migrate();
  auth = await fundedKeyIn(storage, 'acct_1', parseUsd('1'));
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
    const request = {
      model: 'beta-5.4',
      system: [],
      messages: [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'hi' }] }],
      sampling: {},
      stream: false,
      extensions: {},
      extensionsProtocol: 'openai-chat' as const,
      maxOutputTokens: 50,
    };
    await billing.admit('req_retry', auth, model, request);
    const result = await billing.settle({
      requestId: 'req_retry',
      auth,
      model,
      usage,
      status: 'ok',
      stream: false,
      startedAt: 0,
      rawUsage: null,
    });
    expect(repository.attempts).toBe(2);
    expect(result).toEqual({ settled: false, reason: 'already_settled' });
    const cost = 100n * model.prices.input + 50n * model.prices.output;
    expect(await storage.billing.balance('acct_1')).toMatchObject({
      balanceNano: parseUsd('1') - cost,
      reservedNano: 0n,
    });
    expect((await storage.billing.ledger('acct_1', 10)).filter((entry) => entry.kind === 'usage')).toHaveLength(1);
    expect(await storage.usage.listByAccount('acct_1', 10)).toHaveLength(1);
    expect(await storage.billing.verifyLedger()).toEqual([]);
  });

  it('refuses with 403 insufficient_balance when the hold cannot be covered', async () => {
    const billing = new BillingService(storage.billing, { freeTokensPerDay: 0, reservationTtlMs: 60_000 });
    const request = {
      model: 'beta-5.4',
      system: [],
      messages: [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'hi' }] }],
      sampling: {},
      stream: false,
      extensions: {},
      extensionsProtocol: 'openai-chat' as const,
      maxOutputTokens: 100_000,
    };
    // The prompt and one output token are more than 1 nano-USD: refused, saying what it needed and what is held.
    await expect(billing.admit('req_big', await accountWith(1n), model, request)).rejects.toMatchObject({
      status: 403,
      code: 'insufficient_balance',
      message: expect.stringMatching(
        /needs \$[\d.]+ to start .* The balance is \$0\.000000001; no request of the account is in flight\./,
      ),
    });
  });
});

describe('BillingService.admit with several choices', () => {
  it('a request for n choices may grow to n times its output limit: covered whole only when the account can pay that', async () => {
    const billing = new BillingService(storage.billing, { freeTokensPerDay: 0, reservationTtlMs: 60_000 });
    const request = (choices?: number): CanonicalRequest => ({
      model: 'beta-5.4',
      system: [],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
      sampling: {},
      stream: false,
      extensions: {},
      extensionsProtocol: 'openai-chat',
      maxOutputTokens: 100,
      ...(choices === undefined ? {} : { choices: { count: choices, param: 'n' } }),
    });
    // The prompt (a few dozen tokens with the margin) and about 200 output tokens: one choice of 100, not three.
    const balance = 100n * model.prices.input + 200n * model.prices.output;
    const one = await billing.admit('req_n1', await accountWith(balance), model, request());
    expect(one.coversLimit).toBe(true);
    const three = await billing.admit('req_n3', await accountWith(balance), model, request(3));
    expect(three.coversLimit).toBe(false);
  });
});

let accounts = 0;
/** A fresh account holding `balanceNano` (none for 0), with its key. */
function accountWith(balanceNano: bigint): Promise<AuthenticatedKey> {
  return fundedKeyIn(storage, `acct_admit_${++accounts}`, balanceNano);
}

function chatRequest(maxOutputTokens: number | undefined): CanonicalRequest {
  const text = 'Tell me about toll gates on old roads, and how they were priced. 東京の料金所は？ 🚀 '.repeat(12);
  return {
    model: 'beta-5.4',
    system: [{ type: 'text', text: 'You are terse.' }],
    messages: [
      { role: 'user', content: [{ type: 'text', text }] },
      { role: 'assistant', content: [{ type: 'tool-call', id: 'c1', name: 'lookup', argumentsJson: '{"q":"toll"}' }] },
      {
        role: 'user',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'c1',
            isError: false,
            content: [{ type: 'text', text: 'Roads were tolled by the mile.' }],
          },
        ],
      },
    ],
    sampling: {},
    stream: false,
    extensions: {},
    extensionsProtocol: 'openai-chat',
    ...(maxOutputTokens === undefined ? {} : { maxOutputTokens }),
  };
}

/** The hold's input tokens for a count, as admission sizes it (margin and floor). */
const held = (tokens: number) => Math.ceil(tokens * 1.15) + 16;

describe('admission with the UTF-8 upper bound', () => {
  it('admits, refuses and caps output exactly as the tokenizer count would, at every balance around the thresholds', async () => {
    for (const freeTokensPerDay of [0, 100]) {
      const billing = new BillingService(storage.billing, { freeTokensPerDay, reservationTtlMs: 60_000 });
      for (const clientMax of [undefined, 50, 4_000]) {
        const request = chatRequest(clientMax);
        const precise = held(estimateRequestInputTokens(request));
        const bound = held(upperBoundRequestInputTokens(request));
        expect(bound).toBeGreaterThan(precise);
        const output = BigInt(Math.min(clientMax ?? model.maxOutputTokens, outputSliceOf(model)));
        // Where each count's plan changes: the prompt alone, the prompt and the whole output, for both counts.
        const edges = [precise, bound].flatMap((tokens) => [
          BigInt(tokens) * model.prices.input,
          BigInt(tokens) * model.prices.input + output * model.prices.output,
        ]);
        const balances = [0n, 1n, ...edges.flatMap((edge) => [edge - 1n, edge, edge + 1n]), parseUsd('1000')];
        for (const balanceNano of balances) {
          const accountAuth = await accountWith(balanceNano);
          const expected = planAdmission(
            {
              inputTokens: precise,
              clientMaxOutputTokens: clientMax,
              modelMaxOutputTokens: model.maxOutputTokens,
              firstSliceTokens: outputSliceOf(model),
              prices: model.prices,
            },
            { availableNano: balanceNano, freeTokensLeft: freeTokensPerDay },
          );
          const outcome = await billing.admit(`req_${accountAuth.organisation.id}`, accountAuth, model, request).then(
            (reservation) => ({ admitted: true as const, reservation }),
            (error: unknown) => ({ admitted: false as const, error }),
          );
          const label = `free ${freeTokensPerDay}, max ${clientMax}, balance ${balanceNano}`;
          if (!expected.admitted) {
            expect(outcome.admitted, label).toBe(false);
            expect(!outcome.admitted && outcome.error, label).toMatchObject({
              status: 403,
              code: 'insufficient_balance',
              message: expect.stringContaining(expected.reason),
            });
            expect(await storage.billing.balance(accountAuth.organisation.id), label).toMatchObject({
              reservedNano: 0n,
              freeReservedTokens: 0,
            });
            continue;
          }
          expect(outcome.admitted, label).toBe(true);
          if (!outcome.admitted) continue;
          expect(outcome.reservation.maxOutputTokens, label).toBe(expected.maxOutputTokens);
          // The bound's hold may be larger; never smaller than the tokenizer's.
          expect(outcome.reservation.holdNano >= expected.holdNano, label).toBe(true);
          expect(outcome.reservation.freeTokens, label).toBeGreaterThanOrEqual(expected.freeTokens);
          expect(await storage.billing.balance(accountAuth.organisation.id), label).toMatchObject({
            reservedNano: outcome.reservation.holdNano,
            freeReservedTokens: outcome.reservation.freeTokens,
          });
        }
      }
    }
  });

  it("admits a rich account's request without loading the tokenizer; a refusal loads it and states its count", async () => {
    vi.resetModules();
    const tokens = await import('../canonical/count-tokens.js');
    const { BillingService: FreshBillingService } = await import('./billing-service.js');
    expect(tokens.tokenizerLoaded()).toBe(false);
    const billing = new FreshBillingService(storage.billing, { freeTokensPerDay: 0, reservationTtlMs: 60_000 });
    const rich = await accountWith(parseUsd('100'));
    for (const clientMax of [undefined, 1_000]) {
      const reservation = await billing.admit(`req_rich_${clientMax}`, rich, model, chatRequest(clientMax));
      // A first slice of output, not the whole limit (docs/architecture.md#holds-that-grow).
      expect(reservation.maxOutputTokens).toBe(Math.min(clientMax ?? model.maxOutputTokens, outputSliceOf(model)));
      // Sized with the bound: more than the tokenizer's count would hold.
      const boundHold =
        BigInt(held(upperBoundRequestInputTokens(chatRequest(clientMax)))) * model.prices.input +
        BigInt(reservation.maxOutputTokens) * model.prices.output;
      expect(reservation.holdNano).toBe(boundHold);
    }
    expect(tokens.tokenizerLoaded()).toBe(false);

    // Less than the prompt alone costs: refused (a balance that covers the prompt starts with a partial slice).
    const poor = await accountWith(parseUsd('0.00005'));
    const request = chatRequest(1_000);
    await expect(billing.admit('req_poor', poor, model, request)).rejects.toMatchObject({
      code: 'insufficient_balance',
      message: expect.stringContaining(`about ${held(estimateRequestInputTokens(request))} input tokens`),
    });
    expect(tokens.tokenizerLoaded()).toBe(true);
  });
});

describe('checkpoints of delivered output', () => {
  it('writes the checkpoints of all live streams in one storage call per interval, and a dead instance is billed at them', async () => {
    const calls: number[] = [];
    let alive = true;
    const repository = Object.create(storage.billing) as BillingRepository;
    repository.renewHolds = (renewals) => {
      // A dead instance writes nothing more; without this a tick due at the same moment could renew the holds.
      if (!alive) return Promise.resolve(new Set<string>());
      calls.push(renewals.length);
      return storage.billing.renewHolds(renewals);
    };
    let clock = 1_000_000;
    const billing = new BillingService(
      repository,
      { freeTokensPerDay: 0, reservationTtlMs: 60_000, checkpointIntervalMs: 20, pricesOf: () => model.prices },
      () => clock,
    );
    const owner = await accountWith(parseUsd('1'));
    const output = new Map<string, number>();
    for (const requestId of ['req_ck_1', 'req_ck_2', 'req_ck_3']) {
      await billing.admit(requestId, owner, model, chatRequest(1_000));
      output.set(requestId, 0);
      billing.track(requestId, () => {
        const tokens = output.get(requestId)!;
        return tokens === 0
          ? undefined
          : {
              model: model.id,
              family: model.family,
              stream: true,
              inputTokens: 40,
              cacheReadTokens: 0,
              cacheWriteTokens: 0,
              cacheWrite1hTokens: 0,
              outputTokens: tokens,
              at: clock,
            };
      });
    }
    // Output arrives (many chunks each); the clock passes one interval: the next tick writes all three at once.
    for (let chunk = 1; chunk <= 50; chunk++) for (const requestId of output.keys()) output.set(requestId, chunk * 3);
    clock += 25;
    // Read from outside, as another instance would.
    const reader = new Database(join(directory, 'db.sqlite'), { readonly: true });
    const checkpointed = async () =>
      (
        reader
          .prepare('select checkpoint_output_tokens as output from reservations where account_id = ?')
          .all(owner.organisation.id) as Array<{ output: number }>
      ).filter((row) => Number(row.output) === 150).length;
    // Bounded by the test's own timeout: ticks run every 20 ms.
    while ((await checkpointed()) < 3) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(calls.filter((size) => size > 0)[0]).toBe(3);
    reader.close();
    // Nothing moved since: later ticks write nothing until a hold needs renewing.
    const written = calls.length;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(calls.length).toBe(written);

    // The instance dies (its holds are no longer renewed); past the TTL a sweeper settles each at its checkpoint.
    alive = false;
    clock += 61_000;
    expect(await billing.sweepExpired()).toMatchObject({ released: 0, settled: 3 });
    const records = await storage.usage.listByAccount(owner.organisation.id, 10);
    expect(records.map((record) => [record.status, record.inputTokens, record.outputTokens, record.costNano])).toEqual(
      Array(3).fill(['instance_lost', 40, 150, 40n * model.prices.input + 150n * model.prices.output]),
    );
    expect(await storage.billing.balance(owner.organisation.id)).toMatchObject({
      reservedNano: 0n,
      balanceNano: parseUsd('1') - 3n * (40n * model.prices.input + 150n * model.prices.output),
    });
    expect(await storage.billing.verifyLedger()).toEqual([]);
  });
});

describe('the hold of a request with a 1-hour cache breakpoint', () => {
  const sonnet = new ModelCatalog().resolve('alpha-sonnet-5');
  /** A long system prompt cached for an hour (or for 5 minutes), and 10 output tokens at most. */
  const cachedRequest = (ttl: '5m' | '1h'): CanonicalRequest => ({
    model: 'alpha-sonnet-5',
    system: [{ type: 'text', text: 'You review code for toll-road billing systems. '.repeat(200), cache: { ttl } }],
    messages: [{ role: 'user', content: [{ type: 'text', text: 'Review the last change.' }] }],
    sampling: {},
    stream: false,
    extensions: {},
    extensionsProtocol: 'anthropic-messages',
    maxOutputTokens: 10,
  });
  const OUTPUT_HOLD = 10n * 15_000n;

  it('prices every prompt token at the 1-hour write price, and the charge of an all-1-hour prompt fits it', async () => {
    const billing = new BillingService(storage.billing, { freeTokensPerDay: 0, reservationTtlMs: 60_000 });
    // Alpha's prompt estimate is calibrated at its family's default ratio (nothing learned yet).
    const precise = held(calibratedTokens(estimateRequestInputTokens(cachedRequest('1h')), 1.2));
    // The tokenizer's plan (taken when the UTF-8 bound does not fit the balance): 6,000 nano a prompt token.
    const hold1h = BigInt(precise) * 6_000n + OUTPUT_HOLD;
    const hold5m = BigInt(precise) * 3_750n + OUTPUT_HOLD;

    // One nano-dollar short of the prompt at the 1-hour price and one output token: refused, where the same prompt
    // cached for 5 minutes starts with its whole output held.
    const short = await accountWith(BigInt(precise) * 6_000n + 15_000n - 1n);
    await expect(billing.admit('req_1h_short', short, sonnet, cachedRequest('1h'))).rejects.toMatchObject({
      code: 'insufficient_balance',
    });
    const reservation5m = await billing.admit('req_5m_short', short, sonnet, cachedRequest('5m'));
    expect(reservation5m.holdNano).toBe(hold5m);

    // Exactly the 1-hour hold: admitted, and the vendor writing the whole prompt for an hour is charged in full.
    const exact = await accountWith(hold1h);
    const reservation = await billing.admit('req_1h_exact', exact, sonnet, cachedRequest('1h'));
    expect(reservation.holdNano).toBe(hold1h);
    const prompt = estimateRequestInputTokens(cachedRequest('1h'));
    const result = await billing.settle({
      requestId: 'req_1h_exact',
      auth: exact,
      model: sonnet,
      usage: {
        inputTokens: 0,
        cacheReadTokens: 0,
        cacheWriteTokens: prompt,
        cacheWrite1hTokens: prompt,
        outputTokens: 10,
        reasoningTokens: 0,
      },
      status: 'ok',
      stream: false,
      startedAt: 0,
      rawUsage: null,
      reservation,
    });
    const charge = BigInt(prompt) * 6_000n + OUTPUT_HOLD;
    expect(result).toMatchObject({ settled: true, chargedNano: charge, unbilledNano: 0n });
    expect(charge <= hold1h).toBe(true);
    expect(await storage.billing.balance(exact.organisation.id)).toMatchObject({
      balanceNano: hold1h - charge,
      reservedNano: 0n,
    });
    const [record] = await storage.usage.listByAccount(exact.organisation.id, 1);
    expect(record).toMatchObject({ cacheWriteTokens: prompt, cacheWrite1hTokens: prompt, costNano: charge });
  });
});

describe('calibrated prompt estimates', () => {
  const alpha = new ModelCatalog().resolve('alpha-sonnet-5');
  /** The hold's input tokens for a local count at a ratio: calibrated, then the margin and floor. */
  const heldAt = (tokens: number, ratio: number) => held(calibratedTokens(tokens, ratio));

  it("sizes an alpha model's hold on its learned ratio, starting from the family default", async () => {
    const calibration = new InputCalibration();
    const billing = new BillingService(storage.billing, { freeTokensPerDay: 0, reservationTtlMs: 60_000, calibration });
    const request = chatRequest(100);
    const bound = upperBoundRequestInputTokens(request);
    const holdOf = async (ratio: number) => {
      const owner = await accountWith(parseUsd('100'));
      const reservation = await billing.admit(`req_cal_${owner.organisation.id}`, owner, alpha, request);
      const expected = BigInt(heldAt(bound, ratio)) * inputPrice({ prices: alpha.prices }) + 100n * alpha.prices.output;
      expect(reservation.holdNano).toBe(expected);
      return reservation.holdNano;
    };
    const atDefault = await holdOf(1.2);
    for (let sample = 0; sample < WARM_UP_SAMPLES; sample++) calibration.observe(alpha.id, 'alpha', 1_000, 1_500);
    expect(billing.inputRatio(alpha)).toBe(1.5);
    expect(await holdOf(1.5)).toBeGreaterThan(atDefault);
    // A beta model keeps the tokenizer's count (ratio 1): its hold is as before calibration.
    expect(billing.inputRatio(model)).toBe(1);
  });

  it("learns from a settled request's vendor count of a prompt admission counted, never from the gateway's own count", async () => {
    const calibration = new InputCalibration();
    const billing = new BillingService(storage.billing, { freeTokensPerDay: 0, reservationTtlMs: 60_000, calibration });
    const owner = await accountWith(parseUsd('100'));
    const settle = async (requestId: string, vendorReported: boolean) => {
      const reservation = await billing.admit(requestId, owner, alpha, chatRequest(100), 1_000);
      await billing.settle({
        requestId,
        auth: owner,
        model: alpha,
        usage: { ...usage, inputTokens: 1_100, cacheReadTokens: 400 },
        status: 'ok',
        stream: false,
        startedAt: 0,
        rawUsage: null,
        reservation,
        vendorReported,
      });
    };
    await settle('req_cal_estimated', false);
    expect(calibration.snapshot().get(alpha.id)).toBeUndefined();
    await settle('req_cal_reported', true);
    expect(calibration.snapshot().get(alpha.id)).toEqual({ ratio: 1.2, samples: 1, warmUpSum: 1.5 });
  });
});
