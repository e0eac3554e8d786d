/**
 * Holds that grow with the reply (docs/architecture.md#holds-that-grow), on SQLite and on the real PostgreSQL: a small
 * balance runs many requests at once; a reply the balance cannot pay for ends as a length stop in the client's
 * protocol, billed for what was delivered, never below zero; the vendor's overrun is counted on the usage record.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import { countTextTokens, loadTokenizer } from '../../src/canonical/count-tokens.js';
import { outputSliceOf } from '../../src/billing/priced-model.js';
import { ModelCatalog } from '../../src/catalog/model-catalog.js';
import { BYTE_SLICE_MULTIPLE } from '../../src/pipeline/output-gate.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const catalog = new ModelCatalog();

/** `tollgate_output_slices_total` granted on beta-5.4, from a /metrics text. */
function grantedSlices(metrics: string): number {
  const match = /tollgate_output_slices_total\{model="beta-5\.4",outcome="granted"\} (\d+)/.exec(metrics);
  return match === null ? 0 : Number(match[1]);
}

describe.each([{ postgres: false }, { postgres: true }])('holds in slices (postgres: $postgres)', ({ postgres }) => {
  let harness: TestGateway;

  beforeAll(async () => {
    // No free allowance: every token is paid, so the balance alone decides.
    harness = await startTestGateway({ postgres, env: { FREE_TOKENS_PER_DAY: '0' } });
    await loadTokenizer();
  }, 30_000);

  afterAll(async () => {
    await harness?.close();
  });

  async function funded(usd: string) {
    const { accountId, key } = await harness.createAccountWithKey(undefined, 'enterprise');
    await harness.gateway.storage.billing.credit({
      accountId,
      kind: 'topup',
      amountNano: parseUsd(usd),
      idempotencyKey: `topup-${accountId}`,
      note: null,
      at: Date.now(),
    });
    return { accountId, key };
  }

  function openaiChat(key: string, body: Record<string, unknown>): Promise<Response> {
    return fetch(`${harness.openaiBaseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  }

  function anthropicMessages(key: string, body: Record<string, unknown>): Promise<Response> {
    return fetch(`${harness.gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  }

  /** The account's money, the ledger check and what is left held: the invariants every test ends with. */
  async function expectConsistent(accountId: string, funding: string) {
    const { storage } = harness.gateway;
    const money = (await storage.billing.balance(accountId))!;
    const rows = await storage.usage.listByAccount(accountId, 500);
    expect(money.balanceNano >= 0n).toBe(true);
    expect(money.reservedNano).toBe(0n);
    expect(money.balanceNano).toBe(parseUsd(funding) - rows.reduce((sum, row) => sum + row.costNano, 0n));
    expect(rows.every((row) => row.unbilledNano === 0n)).toBe(true);
    expect(await storage.billing.verifyLedger()).toEqual([]);
    return rows;
  }

  it('$5 runs 20 concurrent beta-5.4 streams without max_tokens: all admitted and completed', async () => {
    const { accountId, key } = await funded('5');
    const responses = await Promise.all(
      Array.from({ length: 20 }, () =>
        openaiChat(key, {
          model: 'beta-5.4',
          stream: true,
          stream_options: { include_usage: true },
          messages: [{ role: 'user', content: 'A story [[sim words=250]]' }],
        }),
      ),
    );
    expect(responses.map((response) => response.status)).toEqual(Array(20).fill(200));
    const bodies = await Promise.all(responses.map((response) => response.text()));
    for (const body of bodies) expect(body).toContain('"finish_reason":"stop"');
    const rows = await expectConsistent(accountId, '5');
    expect(rows.map((row) => row.status)).toEqual(Array(20).fill('ok'));
    // Replies of a few hundred tokens: each fit its first slice.
    for (const row of rows) expect(row.outputTokens).toBeGreaterThan(200);
  });

  it('$5 runs 20 concurrent alpha-opus-4-8 streams with max_tokens 32000 (a coding agent): all admitted and completed', async () => {
    const { accountId, key } = await funded('5');
    const responses = await Promise.all(
      Array.from({ length: 20 }, () =>
        anthropicMessages(key, {
          model: 'alpha-opus-4-8',
          max_tokens: 32_000,
          stream: true,
          messages: [{ role: 'user', content: 'Refactor this [[sim words=250]]' }],
        }),
      ),
    );
    expect(responses.map((response) => response.status)).toEqual(Array(20).fill(200));
    for (const body of await Promise.all(responses.map((response) => response.text())))
      expect(body).toContain('"stop_reason":"end_turn"');
    const rows = await expectConsistent(accountId, '5');
    expect(rows.map((row) => row.status)).toEqual(Array(20).fill('ok'));
  });

  it('a reply longer than the first slice grows its hold a few slices at a time, by bytes, and completes, billed by the vendor usage', async () => {
    const { accountId, key } = await funded('5');
    const slice = outputSliceOf(catalog.resolve('beta-5.4'));
    const slicesBefore = grantedSlices(await (await fetch(`${harness.gateway.url}/metrics`)).text());
    const response = await openaiChat(key, {
      model: 'beta-5.4',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'A long story [[sim words=4000 chunk-delay=0]]' }],
    });
    expect(response.status).toBe(200);
    const body = await response.text();
    expect(body).toContain('"finish_reason":"stop"');
    const chunks = body
      .split('\n')
      .filter((line) => line.startsWith('data: {'))
      .map(
        (line) =>
          JSON.parse(line.slice(6)) as {
            choices: { delta: { content?: string } }[];
            usage?: { completion_tokens: number } | null;
          },
      );
    const usage = chunks.find((chunk) => chunk.usage !== undefined && chunk.usage !== null) as {
      usage: { completion_tokens: number };
    };
    expect(usage.usage.completion_tokens).toBeGreaterThan(2 * slice);
    const [row] = await expectConsistent(accountId, '5');
    expect(row).toMatchObject({ status: 'ok', outputTokens: usage.usage.completion_tokens, unbilledTokens: 0 });
    // One storage call per slice, never per chunk, and no tokenizer between them: the hold grew from 2,048 tokens
    // by slices of 4 x 2,048 counted in bytes (one token per byte at most), as many as the reply's bytes needed.
    const bytes = Buffer.byteLength(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join(''));
    const slices = grantedSlices(await (await fetch(`${harness.gateway.url}/metrics`)).text()) - slicesBefore;
    expect(slices).toBe(Math.ceil((bytes - slice) / (BYTE_SLICE_MULTIPLE * slice)));
  });

  describe('a long reply on a $0.01 account ends as a length stop, billing what was delivered', () => {
    // beta-5.4 at $15 per million output tokens: $0.01 pays for about 660 tokens; the reply is thousands.
    const prompt = 'Write at length [[sim words=3000 chunk-delay=1]]';

    async function expectCut(accountId: string, deliveredText: string) {
      const rows = await expectConsistent(accountId, '0.01');
      expect(rows).toHaveLength(1);
      const [row] = rows;
      expect(row!.status).toBe('slice_refused');
      // Billed: the prompt and exactly what was delivered (the tokenizer's count of it).
      expect(row!.outputTokens).toBe(countTextTokens(deliveredText));
      expect(row!.outputTokens).toBeGreaterThan(100);
      // The vendor's overrun: generated after the refused slice, never delivered, never billed, and bounded by design
      // (at most a slice plus the chunk in flight; here the one chunk that crossed the grant).
      expect(row!.unbilledTokens).toBeGreaterThan(0);
      expect(row!.unbilledTokens).toBeLessThanOrEqual(outputSliceOf(catalog.resolve(row!.model)));
      // Spent to within the prompt's estimate margin and a chunk (98%), never below zero.
      const money = (await harness.gateway.storage.billing.balance(accountId))!;
      expect(money.balanceNano < parseUsd('0.0002')).toBe(true);
      return row!;
    }

    it('OpenAI chat, streamed: finish_reason length', async () => {
      const { accountId, key } = await funded('0.01');
      const response = await openaiChat(key, {
        model: 'beta-5.4',
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: 'user', content: prompt }],
      });
      expect(response.status).toBe(200);
      const frames = (await response.text())
        .split('\n\n')
        .filter((frame) => frame.startsWith('data: ') && frame !== 'data: [DONE]');
      const chunks = frames.map(
        (frame) =>
          JSON.parse(frame.slice(6)) as {
            choices: Array<{ delta?: { content?: string }; finish_reason: string | null }>;
            usage?: { completion_tokens: number };
          },
      );
      const text = chunks.map((chunk) => chunk.choices[0]?.delta?.content ?? '').join('');
      expect(
        chunks
          .flatMap((chunk) => chunk.choices.map((choice) => choice.finish_reason))
          .filter((reason) => reason !== null),
      ).toEqual(['length']);
      const row = await expectCut(accountId, text);
      expect(chunks.at(-1)!.usage!.completion_tokens).toBe(row.outputTokens);
    });

    it('OpenAI chat, non-stream (read from the vendor as a stream): finish_reason length, answered whole', async () => {
      const { accountId, key } = await funded('0.01');
      const response = await openaiChat(key, { model: 'beta-5.4', messages: [{ role: 'user', content: prompt }] });
      expect(response.status).toBe(200);
      const reply = (await response.json()) as {
        choices: Array<{ message: { content: string }; finish_reason: string }>;
        usage: { completion_tokens: number };
      };
      expect(reply.choices[0]!.finish_reason).toBe('length');
      const row = await expectCut(accountId, reply.choices[0]!.message.content);
      expect(reply.usage.completion_tokens).toBe(row.outputTokens);
    });

    it('through the OpenAI client on a Gemini-family model (gamma-2.5-pro, $10 per million output): finish_reason length', async () => {
      const { accountId, key } = await funded('0.01');
      const response = await openaiChat(key, {
        model: 'gamma-2.5-pro',
        stream: true,
        messages: [{ role: 'user', content: prompt }],
      });
      expect(response.status).toBe(200);
      const chunks = (await response.text())
        .split('\n\n')
        .filter((frame) => frame.startsWith('data: {'))
        .map(
          (frame) =>
            JSON.parse(frame.slice(6)) as {
              choices: Array<{ delta?: { content?: string }; finish_reason: string | null }>;
            },
        );
      expect(
        chunks
          .flatMap((chunk) => chunk.choices.map((choice) => choice.finish_reason))
          .filter((reason) => reason !== null),
      ).toEqual(['length']);
      const rows = await expectConsistent(accountId, '0.01');
      expect(rows[0]).toMatchObject({
        status: 'slice_refused',
        outputTokens: countTextTokens(chunks.map((chunk) => chunk.choices[0]?.delta?.content ?? '').join('')),
      });
      expect(rows[0]!.unbilledTokens).toBeGreaterThan(0);
    });

    it('Anthropic Messages, streamed and not: stop_reason max_tokens', async () => {
      for (const stream of [true, false]) {
        const { accountId, key } = await funded('0.01');
        // alpha-haiku-4-5 at $5 per million output tokens: $0.01 pays for about 2,000; the reply is longer.
        const response = await anthropicMessages(key, {
          model: 'alpha-haiku-4-5',
          max_tokens: 32_000,
          stream,
          messages: [{ role: 'user', content: 'Write at length [[sim words=6000 chunk-delay=1]]' }],
        });
        expect(response.status).toBe(200);
        let text: string;
        if (stream) {
          const body = await response.text();
          expect(body).toContain('"stop_reason":"max_tokens"');
          text = body
            .split('\n')
            .filter((line) => line.startsWith('data: {'))
            .map((line) => JSON.parse(line.slice(6)) as { type: string; delta?: { type: string; text?: string } })
            .filter((event) => event.type === 'content_block_delta' && event.delta?.type === 'text_delta')
            .map((event) => event.delta!.text!)
            .join('');
        } else {
          const message = (await response.json()) as {
            stop_reason: string;
            content: Array<{ type: string; text: string }>;
          };
          expect(message.stop_reason).toBe('max_tokens');
          text = message.content.map((block) => block.text).join('');
        }
        const rows = await harness.gateway.storage.usage.listByAccount(accountId, 5);
        expect(rows[0]).toMatchObject({ status: 'slice_refused', outputTokens: countTextTokens(text) });
        const money = (await harness.gateway.storage.billing.balance(accountId))!;
        expect(money).toMatchObject({ reservedNano: 0n });
        expect(money.balanceNano >= 0n && money.balanceNano < parseUsd('0.0002')).toBe(true);
      }
      expect(await harness.gateway.storage.billing.verifyLedger()).toEqual([]);
    });

    it('GET /v1/account shows the balance, what is held and by how many requests in flight', async () => {
      const { key } = await funded('0.01');
      // A slow reply keeps its hold while the account is read.
      const slow = openaiChat(key, {
        model: 'beta-5.4',
        stream: true,
        messages: [{ role: 'user', content: 'slowly [[sim words=40 chunk-delay=100]]' }],
      });
      const response = await slow;
      const reader = response.body!.getReader();
      await reader.read();
      const account = (await (
        await fetch(`${harness.gateway.url}/v1/account`, { headers: { authorization: `Bearer ${key}` } })
      ).json()) as {
        balance: { usd: string; reserved_nano_usd: string; requests_in_flight: number };
      };
      expect(account.balance.usd).toBe('0.01');
      expect(account.balance.requests_in_flight).toBe(1);
      expect(BigInt(account.balance.reserved_nano_usd)).toBeGreaterThan(0n);
      // The refusal of a request that cannot start says the same.
      const refused = await openaiChat(key, {
        model: 'alpha-opus-4-8',
        messages: [{ role: 'user', content: 'lorem ipsum dolor sit amet '.repeat(3_000) }],
      });
      expect(refused.status).toBe(403);
      const { error } = (await refused.json()) as { error: { code: string; message: string } };
      expect(error.code).toBe('insufficient_balance');
      expect(error.message).toMatch(
        /needs \$[\d.]+ to start .* The balance is \$0\.01; 1 request in flight holds \$[\d.]+ of it until it finishes\./,
      );
      while (!(await reader.read()).done);
    });
  });
});
