/**
 * A stream that outlives RESERVATION_TTL_MS keeps its hold: the billing service renews the holds of requests in
 * flight, so the sweeper (which releases holds of crashed instances) never releases a live request's hold and the
 * money it covers cannot be spent twice. Short timers (TOLLGATE_SHORT_TIMERS) make the TTL one second.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const TTL_MS = 1_000;
// Chunks 100 ms apart for 4.5 s: four TTLs and nine sweeps.

describe.each([{ postgres: false }, { postgres: true }])(
  'a stream longer than the hold TTL (postgres: $postgres)',
  ({ postgres }) => {
    let harness: TestGateway;

    beforeAll(async () => {
      harness = await startTestGateway({
        postgres,
        env: {
          TOLLGATE_SHORT_TIMERS: '1',
          RESERVATION_TTL_MS: String(TTL_MS),
          SWEEP_INTERVAL_MS: '500',
          FREE_TOKENS_PER_DAY: '0',
        },
      });
    });

    afterAll(async () => {
      await harness?.close();
    });

    async function reservedByGateway(key: string): Promise<bigint> {
      const response = await fetch(`${harness.gateway.url}/v1/account`, {
        headers: { authorization: `Bearer ${key}` },
      });
      return BigInt(((await response.json()) as { balance: { reserved_nano_usd: string } }).balance.reserved_nano_usd);
    }

    it('keeps its hold until it settles, then is charged once and nothing stays reserved', async () => {
      const { accountId, key } = await harness.createAccountWithKey();
      await harness.gateway.storage.billing.credit({
        accountId,
        kind: 'topup',
        amountNano: parseUsd('1'),
        idempotencyKey: `topup-${accountId}`,
        note: null,
        at: Date.now(),
      });
      const openai = new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
      const stream = await openai.chat.completions.create({
        model: 'beta-5.4',
        messages: [{ role: 'user', content: 'a long story [[sim words=45 chunk-delay=100]]' }],
        stream: true,
        stream_options: { include_usage: true },
        max_completion_tokens: 200,
      });
      const samples: { atChunk: number; afterMs: number; reservedNano: bigint }[] = [];
      const started = Date.now();
      let lastSample = started;
      let chunks = 0;
      for await (const _chunk of stream) {
        chunks += 1;
        if (Date.now() - lastSample > 500) {
          lastSample = Date.now();
          samples.push({
            atChunk: chunks,
            afterMs: lastSample - started,
            // On SQLite the live holds are in the gateway's memory, not in the database: read as it reports them.
            reservedNano: postgres
              ? (await harness.gateway.storage.billing.balance(accountId))!.reservedNano
              : await reservedByGateway(key),
          });
        }
      }
      expect(Date.now() - started).toBeGreaterThan(3 * TTL_MS);
      // Samples from the last chunks are left out: the simulator sends its last content chunk together with the
      // finish, and the gateway settles (releasing the hold) before the closing usage chunk, so a sample taken
      // there may rightly see nothing reserved. Five chunks before the end, the vendor has at least 400 ms to go.
      const midStream = samples.filter((sample) => sample.atChunk <= chunks - 5);
      expect(midStream.length).toBeGreaterThanOrEqual(5);
      expect(midStream.some((sample) => sample.afterMs > 3 * TTL_MS)).toBe(true);
      // Sampled past several TTLs and sweeps: the hold was there every time.
      expect(midStream.map((sample) => sample.reservedNano > 0n)).toEqual(midStream.map(() => true));
      const [row] = await harness.gateway.storage.usage.listByAccount(accountId, 5);
      expect(row).toMatchObject({ status: 'ok', unbilledNano: 0n });
      expect(row!.costNano > 0n).toBe(true);
      expect(await harness.gateway.storage.billing.balance(accountId)).toMatchObject({
        balanceNano: parseUsd('1') - row!.costNano,
        reservedNano: 0n,
      });
      expect(await harness.gateway.storage.billing.verifyLedger()).toEqual([]);
    });
  },
);
