import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatUsd, parseUsd } from '../../src/billing/money.js';
import { estimateRequestInputTokens, tokenizerLoaded } from '../../src/canonical/count-tokens.js';
import { decodeOpenAIChatRequest } from '../../src/protocols/openai-chat/openai-decode-request.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

/**
 * The tokenizer (~50 MB once loaded) stays off the request path of accounts whose balance covers an upper bound
 * of the prompt (its UTF-8 bytes); a refusal is still worded with the tokenizer's count. Module state is per test
 * file (vitest isolates files), so `tokenizerLoaded()` here is the gateway's own.
 */
describe('admission without the tokenizer, on SQLite and PostgreSQL', () => {
  const harnesses: Record<'sqlite' | 'postgres', TestGateway | undefined> = { sqlite: undefined, postgres: undefined };

  beforeAll(async () => {
    harnesses.sqlite = await startTestGateway({ env: { FREE_TOKENS_PER_DAY: '0' } });
    harnesses.postgres = await startTestGateway({ postgres: true, env: { FREE_TOKENS_PER_DAY: '0' } });
  });

  afterAll(async () => {
    await harnesses.sqlite?.close();
    await harnesses.postgres?.close();
  });

  async function funded(harness: TestGateway, usd: string) {
    const { key, accountId } = await harness.createAccountWithKey(undefined, 'enterprise');
    await harness.gateway.storage.billing.credit({
      accountId,
      kind: 'topup',
      amountNano: parseUsd(usd),
      idempotencyKey: `t-${accountId}`,
      note: null,
      at: Date.now(),
    });
    return {
      accountId,
      send: (body: Record<string, unknown>) =>
        fetch(`${harness.openaiBaseUrl}/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        }),
    };
  }

  it("serves a rich account's requests (with and without max_tokens, streamed or not) without loading it", async () => {
    for (const harness of [harnesses.sqlite!, harnesses.postgres!]) {
      const { accountId, send } = await funded(harness, '100');
      const messages = [{ role: 'user', content: 'Tell me about toll gates. 料金所 🚀 [[sim words=12]]' }];
      for (const body of [
        { model: 'beta-5.4', messages },
        { model: 'beta-5.4', messages, max_completion_tokens: 40 },
        { model: 'alpha-haiku-4-5', messages, stream: true },
      ]) {
        const response = await send(body);
        expect(response.status).toBe(200);
        await response.text();
      }
      const balance = (await harness.gateway.storage.billing.balance(accountId))!;
      expect(balance.reservedNano).toBe(0n);
      expect(balance.balanceNano < parseUsd('100')).toBe(true);
      expect(await harness.gateway.storage.billing.verifyLedger()).toEqual([]);
    }
    expect(tokenizerLoaded()).toBe(false);
  });

  it("refuses an account that cannot pay the prompt, with the tokenizer's count in the message, and holds nothing", async () => {
    for (const harness of [harnesses.sqlite!, harnesses.postgres!]) {
      // Less than the prompt alone costs (a balance that covers it starts with a partial first slice).
      const { accountId, send } = await funded(harness, '0.00005');
      const body = {
        model: 'beta-5.4',
        messages: [{ role: 'user', content: 'Tell me about toll gates on old roads.' }],
        max_completion_tokens: 1_000,
      };
      const inputTokens = Math.ceil(estimateRequestInputTokens(decodeOpenAIChatRequest(body).request) * 1.15) + 16;
      const response = await send(body);
      expect(response.status).toBe(403);
      const { error } = (await response.json()) as { error: { code: string; message: string } };
      expect(error.code).toBe('insufficient_balance');
      expect(error.message).toContain(
        `this request needs $${formatUsd(BigInt(inputTokens) * 2_500n)} to start (its prompt alone (about ${inputTokens} input tokens))`,
      );
      expect(error.message).toMatch(/The balance is \$0\.00005; no request of the account is in flight\./);
      expect(await harness.gateway.storage.billing.balance(accountId)).toMatchObject({
        balanceNano: parseUsd('0.00005'),
        reservedNano: 0n,
        freeReservedTokens: 0,
      });
      expect(await harness.gateway.storage.usage.listByAccount(accountId, 5)).toEqual([]);
    }
    expect(tokenizerLoaded()).toBe(true);
  });
});
