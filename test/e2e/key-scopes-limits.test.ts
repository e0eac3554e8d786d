/**
 * Keys with scopes and limits (docs/architecture.md#key-scopes-and-limits), end to end on both backends: the real
 * gateway over loopback, the official OpenAI and Anthropic SDKs as callers, the simulator upstream, real SQLite and
 * PostgreSQL.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatUsd, parseUsd } from '../../src/billing/money.js';
import { startTestGateway, type TestGateway, fundedAccountWithKey } from '../helpers/test-gateway.js';

const PROMPT = [{ role: 'user' as const, content: 'ping [[sim words=3]]' }];

describe.each([{ database: 'sqlite' }, { database: 'postgres' }])(
  'keys with scopes and limits on $database',
  ({ database }) => {
    let harness: TestGateway;

    beforeAll(async () => {
      harness = await startTestGateway({ postgres: database === 'postgres', env: { FREE_TOKENS_PER_DAY: '0' } });
    });

    afterAll(async () => {
      await harness?.close();
    });

    async function api(
      key: string,
      method: string,
      path: string,
      body?: unknown,
    ): Promise<{ status: number; json: any }> {
      const response = await fetch(`${harness.gateway.url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${key}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: response.status, json: await response.json() };
    }

    const fundedAccount = (usd: string, tier?: string) => fundedAccountWithKey(harness, usd, tier);

    /** A key made through `POST /v1/keys` by the account's full key. */
    async function makeKey(
      fullKey: string,
      fields: Record<string, unknown>,
    ): Promise<{ key: string; id: string; json: any }> {
      const created = await api(fullKey, 'POST', '/v1/keys', { name: 'restricted', ...fields });
      expect(created.status, JSON.stringify(created.json)).toBe(201);
      return { key: created.json.key, id: created.json.id, json: created.json };
    }

    const openai = (key: string) => new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
    const anthropic = (key: string) => new Anthropic({ apiKey: key, baseURL: harness.gateway.url, maxRetries: 0 });

    async function usageCount(accountId: string): Promise<number> {
      return (await harness.gateway.storage.usage.listByAccount(accountId, 500)).length;
    }

    it('a read-only key reads usage, ledger, account and keys, and gets 403 on both model endpoints, key creation and redeem', async () => {
      const { key, accountId } = await fundedAccount('5');
      const readOnly = await makeKey(key, { scopes: 'read_only' });
      expect(readOnly.json.scopes).toEqual(['usage:read']);
      for (const path of [
        '/v1/usage',
        '/v1/usage/requests',
        '/v1/account',
        '/v1/account/ledger',
        '/v1/keys',
        '/v1/models',
      ]) {
        expect((await api(readOnly.key, 'GET', path)).status, path).toBe(200);
      }
      const chat = await openai(readOnly.key)
        .chat.completions.create({ model: 'beta-5.4', messages: PROMPT })
        .catch((error: unknown) => error);
      expect(chat).toBeInstanceOf(OpenAI.PermissionDeniedError);
      expect((chat as InstanceType<typeof OpenAI.PermissionDeniedError>).code).toBe('permission_denied');
      expect((chat as Error).message).toMatch(/'models:use'/);
      const messages = await anthropic(readOnly.key)
        .messages.create({ model: 'alpha-haiku-4-5', max_tokens: 20, messages: PROMPT })
        .catch((error: unknown) => error);
      expect(messages).toBeInstanceOf(Anthropic.PermissionDeniedError);
      expect((messages as InstanceType<typeof Anthropic.PermissionDeniedError>).error).toMatchObject({
        type: 'error',
        error: { type: 'permission_error' },
      });
      expect((messages as Error).message).toMatch(/'models:use'/);
      const counted = await anthropic(readOnly.key)
        .messages.countTokens({ model: 'alpha-haiku-4-5', messages: PROMPT })
        .catch((error: unknown) => error);
      expect(counted).toBeInstanceOf(Anthropic.PermissionDeniedError);

      const create = await api(readOnly.key, 'POST', '/v1/keys', { name: 'sneaky' });
      expect(create.status).toBe(403);
      expect(create.json.error).toMatchObject({ code: 'permission_denied', type: 'permission_error' });
      expect(create.json.error.message).toMatch(/'keys:manage'/);
      expect((await api(readOnly.key, 'POST', '/v1/account/redeem', { code: 'TG-NOPE' })).json.error.message).toMatch(
        /'account:redeem'/,
      );
      expect((await api(readOnly.key, 'DELETE', `/v1/keys/${readOnly.id}`)).status).toBe(403);
      // Nothing was created, served or billed.
      expect((await api(key, 'GET', '/v1/keys')).json.data).toHaveLength(2);
      expect(await usageCount(accountId)).toBe(0);
      expect((await harness.gateway.storage.billing.balance(accountId))?.balanceNano).toBe(parseUsd('5'));
    });

    it('a key cannot create or change keys beyond its own scopes and limits', async () => {
      const { key } = await fundedAccount('5');
      const manager = await makeKey(key, {
        scopes: ['keys:manage', 'models:use'],
        models: ['gamma'],
        spend_limit: { usd: '1', period: 'day' },
        rate_limit: { requests_per_minute: 20 },
      });
      const attempts: Array<[Record<string, unknown>, string]> = [
        [{ scopes: 'full' }, 'scopes'],
        [{ scopes: ['usage:read'] }, 'scopes'],
        [{ models: null }, 'models'],
        [{ models: ['beta'] }, 'models'],
        [{ spend_limit: null }, 'spend_limit'],
        [{ spend_limit: { usd: '1.01', period: 'day' } }, 'spend_limit'],
        [{ spend_limit: { usd: '0.5', period: 'month' } }, 'spend_limit'],
        [{ rate_limit: { requests_per_minute: 21 } }, 'rate_limit'],
        [{ rate_limit: null }, 'rate_limit'],
      ];
      for (const [fields, param] of attempts) {
        const attempt = await api(manager.key, 'POST', '/v1/keys', { name: 'escalated', ...fields });
        expect(attempt.status, JSON.stringify(fields)).toBe(403);
        expect(attempt.json.error).toMatchObject({ code: 'permission_denied', param });
      }
      // Raising itself fails alike; so does rotating a more powerful key (which would hand out its secret).
      expect((await api(manager.key, 'PATCH', `/v1/keys/${manager.id}`, { models: null })).json.error).toMatchObject({
        code: 'permission_denied',
        param: 'models',
      });
      const full = (await api(key, 'GET', '/v1/keys')).json.data.find(
        (entry: { name: string }) => entry.name === 'test',
      );
      expect((await api(manager.key, 'POST', `/v1/keys/${full.id}/rotate`)).status).toBe(403);
      expect((await api(manager.key, 'DELETE', `/v1/keys/${full.id}`)).status).toBe(403);
      expect((await api(manager.key, 'PATCH', `/v1/keys/${full.id}`, { name: 'renamed' })).status).toBe(403);
      expect((await api(key, 'GET', '/v1/keys')).json.data).toHaveLength(2);

      // Within its own: allowed; fields left out are the creator's.
      const child = await makeKey(manager.key, {
        models: ['gamma-3.5-flash'],
        spend_limit: { usd: '0.25', period: 'day' },
      });
      expect(child.json).toMatchObject({
        scopes: ['models:use', 'keys:manage'],
        models: ['gamma-3.5-flash'],
        spend_limit: { usd: '0.25', period: 'day', spent_usd: '0' },
        rate_limit: { requests_per_minute: 20, tokens_per_minute: null },
      });
      // ...and it may change or revoke the keys within its own.
      expect(
        (await api(manager.key, 'PATCH', `/v1/keys/${child.id}`, { spend_limit: { usd: '0.5', period: 'day' } })).json
          .spend_limit,
      ).toMatchObject({ usd: '0.5' });
      expect((await api(manager.key, 'DELETE', `/v1/keys/${child.id}`)).status).toBe(200);
      expect(
        (await api(key, 'GET', '/v1/keys')).json.data.find((entry: { name: string }) => entry.name === 'test').status,
      ).toBe('active');
    });

    it('a family-limited key is refused another family on every client protocol, before anything is held or sent', async () => {
      const { key, accountId } = await fundedAccount('5');
      const gammaOnly = await makeKey(key, { models: ['gamma'] });
      const client = openai(gammaOnly.key);
      for (const stream of [false, true]) {
        const refused = await client.chat.completions
          .create({ model: 'beta-5.4', messages: PROMPT, stream })
          .catch((error: unknown) => error);
        expect(refused).toBeInstanceOf(OpenAI.PermissionDeniedError);
        expect((refused as InstanceType<typeof OpenAI.PermissionDeniedError>).param).toBe('model');
        expect((refused as Error).message).toMatch(/may not use the model 'beta-5.4'.*It may use: gamma/);
      }
      const claude = anthropic(gammaOnly.key);
      for (const stream of [false, true]) {
        const refused = await claude.messages
          .create({ model: 'alpha-sonnet-5', max_tokens: 20, messages: PROMPT, stream })
          .catch((error: unknown) => error);
        expect(refused).toBeInstanceOf(Anthropic.PermissionDeniedError);
        expect((refused as Error).message).toMatch(/may not use the model 'alpha-sonnet-5'/);
      }
      expect(
        await claude.messages.countTokens({ model: 'delta-r1', messages: PROMPT }).catch((error: unknown) => error),
      ).toBeInstanceOf(Anthropic.PermissionDeniedError);
      // Nothing was held, sent or billed for the refusals.
      expect(await usageCount(accountId)).toBe(0);
      expect(await harness.gateway.storage.billing.balance(accountId)).toMatchObject({
        balanceNano: parseUsd('5'),
        reservedNano: 0n,
      });

      // Its own family works on both protocols, and the model list shows only it.
      await expect(
        client.chat.completions.create({ model: 'gamma-3.5-flash', messages: PROMPT }),
      ).resolves.toBeDefined();
      await expect(
        claude.messages.create({ model: 'gamma-2.5-pro', max_tokens: 20, messages: PROMPT }),
      ).resolves.toBeDefined();
      expect((await client.models.list()).data.map((model) => model.id).sort()).toEqual([
        'gamma-2.5-pro',
        'gamma-3.5-flash',
      ]);
      expect((await claude.models.list()).data.map((model) => model.id).sort()).toEqual([
        'gamma-2.5-pro',
        'gamma-3.5-flash',
      ]);
      expect((await api(gammaOnly.key, 'GET', '/v1/models/beta-5.4')).status).toBe(403);

      // A change applies from the next request.
      const patched = await api(key, 'PATCH', `/v1/keys/${gammaOnly.id}`, { models: ['gamma', 'beta-5.4'] });
      expect(patched.json.models).toEqual(['gamma', 'beta-5.4']);
      await expect(client.chat.completions.create({ model: 'beta-5.4', messages: PROMPT })).resolves.toBeDefined();
      expect(
        await client.chat.completions.create({ model: 'beta-5.5', messages: PROMPT }).catch((error: unknown) => error),
      ).toBeInstanceOf(OpenAI.PermissionDeniedError);
    });

    it('a per-key limit of 10 requests a minute admits exactly 10, below the tier', async () => {
      const { key } = await fundedAccount('5', 'standard');
      const limited = await makeKey(key, { rate_limit: { requests_per_minute: 10 } });
      const statuses: number[] = [];
      let lastRefusal: { headers: Headers; json: any } | undefined;
      for (let index = 0; index < 14; index++) {
        const response = await fetch(`${harness.openaiBaseUrl}/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${limited.key}` },
          body: JSON.stringify({ model: 'delta-v4-flash', messages: PROMPT, max_completion_tokens: 10 }),
        });
        statuses.push(response.status);
        if (response.status === 429) lastRefusal = { headers: response.headers, json: await response.json() };
        else await response.body?.cancel();
      }
      expect(statuses.filter((status) => status === 200)).toHaveLength(10);
      expect(statuses.filter((status) => status === 429)).toHaveLength(4);
      expect(lastRefusal!.headers.get('x-ratelimit-limit-requests')).toBe('10');
      expect(Number(lastRefusal!.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(lastRefusal!.json.error.message).toMatch(/this API key's own limit/);
      // The account's other key is not held by it.
      await expect(
        openai(key).chat.completions.create({ model: 'delta-v4-flash', messages: PROMPT }),
      ).resolves.toBeDefined();

      // Tokens per minute of its own (post-paid, like the tier's): refused once the last minute's tokens reach it.
      const tokenLimited = await makeKey(key, { rate_limit: { tokens_per_minute: 50 } });
      const client = openai(tokenLimited.key);
      const first = await client.chat.completions.create({
        model: 'delta-v4-flash',
        messages: [{ role: 'user', content: 'count [[sim words=60]]' }],
        max_completion_tokens: 100,
      });
      expect(first.usage!.total_tokens).toBeGreaterThanOrEqual(50);
      const refused = await client.chat.completions
        .create({ model: 'delta-v4-flash', messages: PROMPT })
        .catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(OpenAI.RateLimitError);
      expect((refused as Error).message).toMatch(/tokens: 50 per minute, this API key's own limit/);
    });

    it('200 concurrent requests on a $0.05 daily key limit never spend past it; the ledger equals the balance', async () => {
      const { key, accountId } = await fundedAccount('100');
      const limited = await makeKey(key, { spend_limit: { usd: '0.05', period: 'day' } });
      const responses = await Promise.all(
        Array.from({ length: 200 }, () =>
          fetch(`${harness.openaiBaseUrl}/chat/completions`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${limited.key}` },
            body: JSON.stringify({
              model: 'beta-5.4',
              messages: [{ role: 'user', content: 'Tell me [[sim words=150]]' }],
              max_completion_tokens: 200,
            }),
          }),
        ),
      );
      const statuses = responses.map((response) => response.status);
      const bodies = await Promise.all(responses.map((response) => response.json() as Promise<any>));
      expect(statuses.filter((status) => status !== 200 && status !== 403)).toEqual([]);
      const refusals = bodies.filter((_, index) => statuses[index] === 403);
      expect(refusals.length).toBeGreaterThan(0);
      expect(statuses.filter((status) => status === 200).length).toBeGreaterThan(0);
      for (const body of refusals) {
        expect(body.error).toMatchObject({ code: 'key_spend_limit_reached' });
        expect(body.error.message).toMatch(
          /\$0\.05 per day \(UTC\) is reached.*resets at \d{4}-\d{2}-\d{2}T00:00:00\.000Z/,
        );
      }
      const records = await harness.gateway.storage.usage.listByAccount(accountId, 500);
      const spent = records
        .filter((record) => record.apiKeyId === limited.id)
        .reduce((sum, record) => sum + record.costNano, 0n);
      expect(spent).toBeLessThanOrEqual(parseUsd('0.05'));
      expect(spent).toBeGreaterThan(parseUsd('0.03'));
      const money = await harness.gateway.storage.billing.balance(accountId);
      expect(money).toMatchObject({ balanceNano: parseUsd('100') - spent, reservedNano: 0n });
      expect(await harness.gateway.storage.billing.verifyLedger()).toEqual([]);
      // GET /v1/keys shows the spend that counts against the limit, nothing held.
      const listed = (await api(key, 'GET', '/v1/keys')).json.data.find(
        (entry: { id: string }) => entry.id === limited.id,
      );
      expect(listed.spend_limit).toMatchObject({
        usd: '0.05',
        period: 'day',
        spent_usd: formatUsd(spent),
        held_usd: '0',
      });
      // Raising the limit applies from the next request.
      await api(key, 'PATCH', `/v1/keys/${limited.id}`, { spend_limit: { usd: '0.10', period: 'day' } });
      await expect(
        openai(limited.key).chat.completions.create({ model: 'beta-5.4', messages: PROMPT }),
      ).resolves.toBeDefined();
    }, 120_000);

    it('bad scopes, models, limits and periods are a 400 naming the field; no key is created or changed', async () => {
      const { key } = await fundedAccount('1');
      const target = await makeKey(key, { models: ['delta'] });
      const bad: Array<[Record<string, unknown>, string]> = [
        [{ scopes: ['models:use', 'admin'] }, 'scopes'],
        [{ scopes: 'everything' }, 'scopes'],
        [{ scopes: [] }, 'scopes'],
        [{ models: ['gpt-9'] }, 'models'],
        [{ models: [] }, 'models'],
        [{ spend_limit: { usd: '-1', period: 'day' } }, 'spend_limit.usd'],
        [{ spend_limit: { usd: 'ten', period: 'day' } }, 'spend_limit.usd'],
        [{ spend_limit: { usd: 1e-12, period: 'day' } }, 'spend_limit.usd'],
        [{ spend_limit: { usd: '0.05', period: 'year' } }, 'spend_limit.period'],
        [{ spend_limit: { usd: '0.05' } }, 'spend_limit.period'],
        [{ rate_limit: { requests_per_minute: 0 } }, 'rate_limit.requests_per_minute'],
        [{ rate_limit: { requests_per_minute: 2.5 } }, 'rate_limit.requests_per_minute'],
      ];
      for (const [fields, param] of bad) {
        const created = await api(key, 'POST', '/v1/keys', { name: 'bad', ...fields });
        expect(created.status, JSON.stringify(fields)).toBe(400);
        expect(created.json.error.param, JSON.stringify(fields)).toBe(param);
        const patched = await api(key, 'PATCH', `/v1/keys/${target.id}`, { name: 'renamed', ...fields });
        expect(patched.status, JSON.stringify(fields)).toBe(400);
        expect(patched.json.error.param).toBe(param);
      }
      const keys = (await api(key, 'GET', '/v1/keys')).json.data;
      expect(keys.map((entry: { name: string }) => entry.name).sort()).toEqual(['restricted', 'test']);
      expect(keys.find((entry: { id: string }) => entry.id === target.id)).toMatchObject({
        name: 'restricted',
        models: ['delta'],
        spend_limit: null,
        rate_limit: null,
      });
    });
  },
);

describe('free-allowance tokens do not count against a key money limit', () => {
  let harness: TestGateway;

  beforeAll(async () => {
    harness = await startTestGateway({ env: { FREE_TOKENS_PER_DAY: '3000' } });
  });

  afterAll(async () => {
    await harness?.close();
  });

  it('a key with a $0 limit is served from the free allowance, cut when a slice would need money, and refused once a request would', async () => {
    const { key, accountId } = await harness.createAccountWithKey(undefined, 'enterprise');
    await harness.gateway.storage.billing.credit({
      accountId,
      kind: 'topup',
      amountNano: parseUsd('5'),
      idempotencyKey: `t-${accountId}`,
      note: null,
      at: Date.now(),
    });
    const created = await fetch(`${harness.gateway.url}/v1/keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ name: 'free only', spend_limit: { usd: '0', period: 'month' } }),
    });
    const freeOnly = (await created.json()) as { key: string; id: string };
    const client = new OpenAI({ apiKey: freeOnly.key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
    const reply = await client.chat.completions.create({
      model: 'beta-5.4',
      messages: PROMPT,
      max_completion_tokens: 50,
    });
    expect((reply.usage as { cost_nano_usd?: string }).cost_nano_usd).toBe('0');
    // A long reply: its hold grows a slice at a time (docs/architecture.md#holds-that-grow), from the free allowance
    // while there is one; the slice that would need money is refused by the key's $0 limit, so the reply ends as a
    // length stop, free.
    const long = await client.chat.completions.create({
      model: 'beta-5.4',
      messages: [{ role: 'user', content: 'At length [[sim words=6000]]' }],
      max_completion_tokens: 120_000,
    });
    expect(long.choices[0]!.finish_reason).toBe('length');
    expect((long.usage as { cost_nano_usd?: string }).cost_nano_usd).toBe('0');
    expect(long.usage!.completion_tokens).toBeGreaterThan(1_000);
    // The allowance is spent: a request that needs money from its start is refused, before anything is held.
    // (A prompt of a few hundred tokens: the few free tokens the cut reply left unused cannot hold its input.)
    const bigPrompt = [
      { role: 'user' as const, content: `${'lorem ipsum dolor sit amet '.repeat(80)}[[sim words=3]]` },
    ];
    const refused = await client.chat.completions
      .create({ model: 'beta-5.4', messages: bigPrompt, max_completion_tokens: 500 })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect((refused as InstanceType<typeof OpenAI.PermissionDeniedError>).code).toBe('key_spend_limit_reached');
    expect((await harness.gateway.storage.apiKeys.findById(accountId, freeOnly.id))!.spend).toMatchObject({
      usedNano: 0n,
      reservedNano: 0n,
    });
    expect(await harness.gateway.storage.billing.balance(accountId)).toMatchObject({
      balanceNano: parseUsd('5'),
      reservedNano: 0n,
    });
  });
});
