/**
 * Key scopes and limits (docs/architecture.md#key-scopes-and-limits) where they meet the other features of the
 * integration, on SQLite and on the real PostgreSQL: a key's spend limit against holds that grow a slice at a time
 * (docs/architecture.md#holds-that-grow), and the scopes and model allowlists on the Responses API and Google's routes.
 * The real gateway over loopback, the simulator upstream, the official OpenAI SDK where it has the call, raw HTTP in
 * Google's and Anthropic's shapes elsewhere.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import { countTextTokens, loadTokenizer } from '../../src/canonical/count-tokens.js';
import { outputSliceOf } from '../../src/billing/priced-model.js';
import { ModelCatalog } from '../../src/catalog/model-catalog.js';
import { startTestGateway, type TestGateway, fundedAccountWithKey } from '../helpers/test-gateway.js';

const catalog = new ModelCatalog();
const GEMINI_BODY = { contents: [{ role: 'user', parts: [{ text: 'ping [[sim words=3]]' }] }] };

describe.each([{ database: 'sqlite' }, { database: 'postgres' }])(
  'key limits with growing holds and the new routes on $database',
  ({ database }) => {
    let harness: TestGateway;

    beforeAll(async () => {
      // No free allowance: every token is paid, so money limits alone decide.
      harness = await startTestGateway({ postgres: database === 'postgres', env: { FREE_TOKENS_PER_DAY: '0' } });
      await loadTokenizer();
    }, 60_000);

    afterAll(async () => {
      await harness?.close();
    });

    async function call(
      method: string,
      path: string,
      headers: Record<string, string>,
      body?: unknown,
    ): Promise<{ status: number; json: any; text: string }> {
      const response = await fetch(`${harness.gateway.url}${path}`, {
        method,
        headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      let json: any = null;
      try {
        json = JSON.parse(text);
      } catch {
        json = null;
      }
      return { status: response.status, json, text };
    }
    const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
    const google = (key: string) => ({ 'x-goog-api-key': key });

    const fundedAccount = (usd: string) => fundedAccountWithKey(harness, usd);

    async function makeKey(fullKey: string, fields: Record<string, unknown>): Promise<{ key: string; id: string }> {
      const created = await call('POST', '/v1/keys', bearer(fullKey), { name: 'restricted', ...fields });
      expect(created.status, created.text).toBe(201);
      return { key: created.json.key, id: created.json.id };
    }

    /** Balance equals funding minus the usage rows, nothing held, the ledger consistent. */
    async function expectConsistent(accountId: string, funding: string) {
      const { storage } = harness.gateway;
      const rows = await storage.usage.listByAccount(accountId, 500);
      const money = (await storage.billing.balance(accountId))!;
      expect(money.reservedNano).toBe(0n);
      expect(money.balanceNano).toBe(parseUsd(funding) - rows.reduce((sum, row) => sum + row.costNano, 0n));
      expect(await storage.billing.verifyLedger()).toEqual([]);
      return rows;
    }

    describe('a key spend limit reached mid-reply by a growing hold', () => {
      // beta-5.4 at $15 per million output tokens: a $0.05 key pays for its first slice and part of a second, about
      // 3,300 tokens; the reply is about 8,000. The account's $5 would pay for all of it: only the key's limit binds.
      const LIMIT = '0.05';
      const prompt = 'Write at length [[sim words=6000 chunk-delay=1]]';
      const slice = outputSliceOf(catalog.resolve('beta-5.4'));

      async function expectCutByKey(accountId: string, keyId: string, deliveredText: string) {
        const rows = await expectConsistent(accountId, '5');
        expect(rows).toHaveLength(1);
        const row = rows[0]!;
        expect(row.status).toBe('slice_refused');
        expect(row.outputTokens).toBe(countTextTokens(deliveredText));
        // More than the first slice: a slice was granted within the key's limit before one was refused.
        expect(row.outputTokens).toBeGreaterThan(slice);
        const key = (await harness.gateway.storage.apiKeys.findById(accountId, keyId))!;
        expect(key.spend.reservedNano).toBe(0n);
        expect(key.spend.usedNano).toBe(row.costNano);
        expect(key.spend.usedNano).toBeLessThanOrEqual(parseUsd(LIMIT));
        // Spent close to the limit (the prompt's estimate margin and one chunk short at most).
        expect(key.spend.usedNano).toBeGreaterThan(parseUsd('0.048'));
        return row;
      }

      it('OpenAI chat, streamed: finish_reason length, the key within its limit', async () => {
        const { key, accountId } = await fundedAccount('5');
        const limited = await makeKey(key, { spend_limit: { usd: LIMIT, period: 'day' } });
        const response = await call('POST', '/v1/chat/completions', bearer(limited.key), {
          model: 'beta-5.4',
          stream: true,
          stream_options: { include_usage: true },
          messages: [{ role: 'user', content: prompt }],
        });
        expect(response.status).toBe(200);
        const chunks = response.text
          .split('\n\n')
          .filter((frame) => frame.startsWith('data: {'))
          .map(
            (frame) =>
              JSON.parse(frame.slice(6)) as {
                choices: Array<{ delta?: { content?: string }; finish_reason: string | null }>;
                usage?: { completion_tokens: number } | null;
              },
          );
        expect(
          chunks
            .flatMap((chunk) => chunk.choices.map((choice) => choice.finish_reason))
            .filter((reason) => reason !== null),
        ).toEqual(['length']);
        const row = await expectCutByKey(
          accountId,
          limited.id,
          chunks.map((chunk) => chunk.choices[0]?.delta?.content ?? '').join(''),
        );
        expect(chunks.at(-1)!.usage!.completion_tokens).toBe(row.outputTokens);
      }, 120_000);

      it('Anthropic Messages, non-stream: stop_reason max_tokens, the key within its limit', async () => {
        const { key, accountId } = await fundedAccount('5');
        const limited = await makeKey(key, { spend_limit: { usd: LIMIT, period: 'month' } });
        const response = await call(
          'POST',
          '/v1/messages',
          { 'x-api-key': limited.key, 'anthropic-version': '2023-06-01' },
          {
            model: 'beta-5.4',
            max_tokens: 32_000,
            messages: [{ role: 'user', content: prompt }],
          },
        );
        expect(response.status, response.text.slice(0, 300)).toBe(200);
        expect(response.json.stop_reason).toBe('max_tokens');
        await expectCutByKey(
          accountId,
          limited.id,
          (response.json.content as Array<{ text: string }>).map((block) => block.text).join(''),
        );
      }, 120_000);
    });

    it('a family-limited key is refused another family on the Responses API and on Google routes, before anything is held or sent', async () => {
      const { key, accountId } = await fundedAccount('5');
      const gammaOnly = await makeKey(key, { models: ['gamma'] });
      const client = new OpenAI({ apiKey: gammaOnly.key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
      for (const stream of [false, true]) {
        const refused = await client.responses
          .create({ model: 'beta-5.4', input: 'ping [[sim words=3]]', stream })
          .catch((error: unknown) => error);
        expect(refused).toBeInstanceOf(OpenAI.PermissionDeniedError);
        expect((refused as InstanceType<typeof OpenAI.PermissionDeniedError>).code).toBe('permission_denied');
        expect((refused as InstanceType<typeof OpenAI.PermissionDeniedError>).param).toBe('model');
        expect((refused as Error).message).toMatch(/may not use the model 'beta-5.4'.*It may use: gamma/);
      }
      const counted = await call('POST', '/v1/responses/input_tokens', bearer(gammaOnly.key), {
        model: 'delta-r1',
        input: 'ping',
      });
      expect(counted.status).toBe(403);
      expect(counted.json.error).toMatchObject({ code: 'permission_denied', type: 'permission_error', param: 'model' });

      for (const method of ['generateContent', 'streamGenerateContent?alt=sse', 'countTokens']) {
        const refused = await call(
          'POST',
          `/v1beta/models/alpha-sonnet-5:${method}`,
          google(gammaOnly.key),
          GEMINI_BODY,
        );
        expect(refused.status, method).toBe(403);
        expect(refused.json.error, method).toMatchObject({
          code: 403,
          status: 'PERMISSION_DENIED',
          details: [{ reason: 'PERMISSION_DENIED', metadata: { param: 'model' } }],
        });
        expect(refused.json.error.message).toMatch(/may not use the model 'alpha-sonnet-5'/);
      }
      expect((await call('GET', '/v1beta/models/beta-5.4', google(gammaOnly.key))).json.error).toMatchObject({
        status: 'PERMISSION_DENIED',
      });
      // Nothing held, sent or billed for the refusals.
      expect(await harness.gateway.storage.usage.listByAccount(accountId, 10)).toHaveLength(0);
      expect(await harness.gateway.storage.billing.balance(accountId)).toMatchObject({
        balanceNano: parseUsd('5'),
        reservedNano: 0n,
      });

      // Its own family is served on both, and every model list (Google's two included) shows only it.
      const answered = await client.responses.create({ model: 'gamma-3.5-flash', input: 'ping [[sim words=3]]' });
      expect(answered.status).toBe('completed');
      const generated = await call(
        'POST',
        '/v1beta/models/gamma-2.5-pro:generateContent',
        google(gammaOnly.key),
        GEMINI_BODY,
      );
      expect(generated.status, generated.text).toBe(200);
      expect(generated.json.candidates[0].finishReason).toBe('STOP');
      const gammaModels = ['models/gamma-2.5-pro', 'models/gamma-3.5-flash'];
      expect(
        (await call('GET', '/v1beta/models', google(gammaOnly.key))).json.models
          .map((model: { name: string }) => model.name)
          .sort(),
      ).toEqual(gammaModels);
      const googleShapedV1 = await call('GET', '/v1/models', {
        ...google(gammaOnly.key),
        'x-goog-api-client': 'google-genai-sdk/3.3.0',
      });
      expect(googleShapedV1.json.models.map((model: { name: string }) => model.name).sort()).toEqual(gammaModels);
      expect((await client.models.list()).data.map((model) => model.id).sort()).toEqual([
        'gamma-2.5-pro',
        'gamma-3.5-flash',
      ]);
      await expectConsistent(accountId, '5');
      expect(await harness.gateway.storage.usage.listByAccount(accountId, 10)).toHaveLength(2);
    }, 60_000);

    it('a read-only key gets 403 naming models:use on the Responses API, its stored responses and Google routes; it may list models', async () => {
      const { key, accountId } = await fundedAccount('5');
      const readOnly = await makeKey(key, { scopes: 'read_only' });
      // A stored response of the account, made with its full key: the read-only key may not read or delete it either.
      const stored = await call('POST', '/v1/responses', bearer(key), {
        model: 'gamma-3.5-flash',
        input: 'ping [[sim words=3]]',
      });
      expect(stored.status, stored.text).toBe(200);
      const client = new OpenAI({ apiKey: readOnly.key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
      const refused = await client.responses
        .create({ model: 'gamma-3.5-flash', input: 'ping' })
        .catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(OpenAI.PermissionDeniedError);
      expect((refused as Error).message).toMatch(/'models:use'/);
      for (const [method, path, body] of [
        ['POST', '/v1/responses/input_tokens', { model: 'gamma-3.5-flash', input: 'ping' }],
        ['GET', `/v1/responses/${stored.json.id}`, undefined],
        ['GET', `/v1/responses/${stored.json.id}/input_items`, undefined],
        ['DELETE', `/v1/responses/${stored.json.id}`, undefined],
      ] as const) {
        const answer = await call(method, path, bearer(readOnly.key), body);
        expect(answer.status, `${method} ${path}`).toBe(403);
        expect(answer.json.error).toMatchObject({ code: 'permission_denied', type: 'permission_error' });
        expect(answer.json.error.message).toMatch(/'models:use'/);
      }
      // Still there for a key that may read it.
      expect((await call('GET', `/v1/responses/${stored.json.id}`, bearer(key))).status).toBe(200);
      for (const method of ['generateContent', 'streamGenerateContent?alt=sse', 'countTokens']) {
        const answer = await call(
          'POST',
          `/v1beta/models/gamma-3.5-flash:${method}`,
          google(readOnly.key),
          GEMINI_BODY,
        );
        expect(answer.status, method).toBe(403);
        expect(answer.json.error).toMatchObject({
          code: 403,
          status: 'PERMISSION_DENIED',
          details: [{ reason: 'PERMISSION_DENIED' }],
        });
        expect(answer.json.error.message).toMatch(/'models:use'/);
      }
      // Under /v1 too, with the key in ?key= (curl's way).
      expect(
        (await call('POST', `/v1/models/gamma-3.5-flash:generateContent?key=${readOnly.key}`, {}, GEMINI_BODY)).status,
      ).toBe(403);
      // Model listings are open to every key.
      expect((await call('GET', '/v1beta/models', google(readOnly.key))).json.models).toHaveLength(
        catalog.models.length,
      );
      expect((await call('GET', '/v1beta/models/gamma-3.5-flash', google(readOnly.key))).status).toBe(200);
      // Nothing but the full key's request was served or billed.
      expect(await harness.gateway.storage.usage.listByAccount(accountId, 10)).toHaveLength(1);
      await expectConsistent(accountId, '5');
    }, 60_000);

    it("a reached key spend limit is a 403 key_spend_limit_reached in the Responses and Google shapes, a 400 billing_error in Anthropic's", async () => {
      const { key, accountId } = await fundedAccount('5');
      const spent = await makeKey(key, { spend_limit: { usd: '0', period: 'total' } });
      const responses = await call('POST', '/v1/responses', bearer(spent.key), {
        model: 'gamma-3.5-flash',
        input: 'ping',
      });
      expect(responses.status).toBe(403);
      expect(responses.json.error).toMatchObject({ code: 'key_spend_limit_reached', type: 'insufficient_quota' });
      expect(responses.json.error.message).toMatch(/spend limit of \$0 in total is reached/);
      const gemini = await call(
        'POST',
        '/v1beta/models/gamma-3.5-flash:streamGenerateContent?alt=sse',
        google(spent.key),
        GEMINI_BODY,
      );
      expect(gemini.status).toBe(403);
      expect(gemini.json.error).toMatchObject({
        code: 403,
        status: 'PERMISSION_DENIED',
        details: [{ reason: 'KEY_SPEND_LIMIT_REACHED', domain: 'tollgate' }],
      });
      const messages = await call(
        'POST',
        '/v1/messages',
        { 'x-api-key': spent.key, 'anthropic-version': '2023-06-01' },
        { model: 'gamma-3.5-flash', max_tokens: 16, messages: [{ role: 'user', content: 'ping' }] },
      );
      expect(messages.status).toBe(400);
      expect(messages.json.error.type).toBe('billing_error');
      expect(messages.json.error.message).toMatch(
        /^You have reached your specified API usage limits\. This API key's spend limit of \$0 in total is reached/,
      );
      expect(await harness.gateway.storage.usage.listByAccount(accountId, 10)).toHaveLength(0);
      await expectConsistent(accountId, '5');
    }, 60_000);
  },
);
