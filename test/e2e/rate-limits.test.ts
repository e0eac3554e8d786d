import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deadRedisUrl } from '../helpers/free-port.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';
import { startGatewayProcess } from '../helpers/gateway-process.js';

let harness: TestGateway;

beforeAll(async () => {
  harness = await startTestGateway();
});

afterAll(async () => {
  await harness?.close();
});

function chat(baseUrl: string, key: string): Promise<Response> {
  return fetch(`${baseUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'beta-5.4',
      messages: [{ role: 'user', content: 'hi [[sim words=1]]' }],
      max_completion_tokens: 5,
    }),
  });
}

describe('rate limits per key (100 requests per minute on the standard tier)', () => {
  it('150 requests at once: exactly 100 admitted, 50 refused with retry-after; another key of the account unaffected', async () => {
    const { key, accountId } = await harness.createAccountWithKey();
    const responses = await Promise.all(Array.from({ length: 150 }, () => chat(harness.gateway.url, key)));
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(100);
    const refused = responses.filter((response) => response.status === 429);
    expect(refused).toHaveLength(50);
    for (const response of refused) {
      const retryAfter = Number(response.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThanOrEqual(55);
      expect(retryAfter).toBeLessThanOrEqual(60);
      expect(response.headers.get('x-ratelimit-remaining-requests')).toBe('0');
      const body = (await response.json()) as { error: { type: string; code: string; message: string } };
      expect(body.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit_exceeded' });
      expect(body.error.message).toMatch(/100 per minute/);
    }
    const second = await harness.gateway.keys.create(accountId, accountId, { name: 'second' });
    expect((await chat(harness.gateway.url, second.secret)).status).toBe(200);
  });

  it('the SDKs see the limit headers on both APIs, consistent with each other', async () => {
    const { key } = await harness.createAccountWithKey();
    const openai = new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
    const { response } = await openai.chat.completions
      .create({ model: 'beta-5.4', messages: [{ role: 'user', content: 'a' }] })
      .withResponse();
    expect(response.headers.get('x-ratelimit-limit-requests')).toBe('100');
    expect(response.headers.get('x-ratelimit-remaining-requests')).toBe('99');
    expect(response.headers.get('x-ratelimit-reset-requests')).toMatch(/^\d+(\.\d+)?(ms|s)$|^\d+m\d+s$/);

    const anthropic = new Anthropic({ apiKey: key, baseURL: harness.gateway.url, maxRetries: 0 });
    const streamed = await anthropic.messages
      .create({ model: 'beta-5.4', max_tokens: 20, stream: true, messages: [{ role: 'user', content: 'b' }] })
      .withResponse();
    for await (const _event of streamed.data) void _event;
    const headers = streamed.response.headers;
    expect(headers.get('x-ratelimit-remaining-requests')).toBe('98');
    expect(headers.get('anthropic-ratelimit-requests-limit')).toBe('100');
    expect(headers.get('anthropic-ratelimit-requests-remaining')).toBe('98');
    expect(Date.parse(headers.get('anthropic-ratelimit-requests-reset')!)).toBeGreaterThan(Date.now() - 1000);
  });

  it('an Anthropic client gets 429 rate_limit_error in its own shape', async () => {
    const { key, accountId } = await harness.createAccountWithKey();
    await harness.gateway.accounts.setTier(
      (await harness.gateway.storage.accounts.findById(accountId))!.email,
      'standard',
      harness.gateway.config.tiers,
    );
    await Promise.all(Array.from({ length: 100 }, () => chat(harness.gateway.url, key)));
    const anthropic = new Anthropic({ apiKey: key, baseURL: harness.gateway.url, maxRetries: 0 });
    const error = (await anthropic.messages
      .create({ model: 'beta-5.4', max_tokens: 20, messages: [{ role: 'user', content: 'c' }] })
      .catch((e: unknown) => e)) as InstanceType<typeof Anthropic.APIError>;
    expect(error).toBeInstanceOf(Anthropic.RateLimitError);
    expect((error.error as { error: { type: string } }).error.type).toBe('rate_limit_error');
    expect(error.headers?.get('retry-after')).toBeTruthy();
  });

  it('a tier change takes effect on the next request', async () => {
    const { key, accountId } = await harness.createAccountWithKey();
    const email = (await harness.gateway.storage.accounts.findById(accountId))!.email;
    expect((await chat(harness.gateway.url, key)).headers.get('x-ratelimit-limit-requests')).toBe('100');
    await harness.gateway.accounts.setTier(email, 'pro', harness.gateway.config.tiers);
    expect((await chat(harness.gateway.url, key)).headers.get('x-ratelimit-limit-requests')).toBe('1000');
    const account = await fetch(`${harness.gateway.url}/v1/account`, { headers: { authorization: `Bearer ${key}` } });
    expect(await account.json()).toMatchObject({ tier: 'pro', rate_limits: { requests_per_minute: 1000 } });
  });
});

describe('the optional tokens-per-minute limit of a tier', () => {
  it('admits while the last minute used less than the limit, then refuses with token headers', async () => {
    const metered = await startTestGateway({
      yaml: 'tiers:\n  metered: { requestsPerMinute: 1000, tokensPerMinute: 50 }\n',
    });
    try {
      const { key } = await metered.createAccountWithKey(undefined, 'metered');
      const first = await chat(metered.gateway.url, key);
      expect(first.status).toBe(200);
      expect(first.headers.get('x-ratelimit-limit-tokens')).toBe('50');
      const body = (await first.json()) as { usage: { total_tokens: number } };
      expect(body.usage.total_tokens).toBeGreaterThan(0);
      // Post-paid: keep going until the recorded usage reaches the limit, then the next request is refused.
      let refused: Response | undefined;
      for (let attempt = 0; attempt < 10 && refused === undefined; attempt++) {
        const response = await chat(metered.gateway.url, key);
        if (response.status === 429) refused = response;
      }
      expect(refused).toBeDefined();
      expect(refused!.headers.get('x-ratelimit-remaining-tokens')).toBe('0');
      expect(Number(refused!.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(((await refused!.json()) as { error: { message: string } }).error.message).toMatch(
        /tokens: 50 per minute/,
      );
    } finally {
      await metered.close();
    }
  });
});

describe('rate limits shared through Redis by two gateway processes', () => {
  const processes: ChildProcess[] = [];
  // PostgreSQL: only it serves several gateway processes (an embedded SQLite file has one, its holds in its memory).
  let shared: TestGateway;

  beforeAll(async () => {
    shared = await startTestGateway({ postgres: true });
  });

  async function startProcess(env: Record<string, string>): Promise<string> {
    const { url, child } = await startGatewayProcess(env);
    processes.push(child);
    return url;
  }

  afterAll(async () => {
    for (const child of processes) {
      child.kill('SIGTERM');
      if (child.exitCode === null) await once(child, 'exit');
    }
    await shared?.close();
  });

  it('together exactly 100 admitted per window for one key, requests alternated between them', async () => {
    const { key } = await shared.createAccountWithKey();
    const env = {
      DATABASE_URL: shared.databaseUrl,
      REDIS_URL: 'redis://127.0.0.1:6379',
      OPENAI_BASE_URL: shared.simulator!.baseUrls.openai,
    };
    const [first, second] = await Promise.all([startProcess(env), startProcess(env)]);
    const responses = await Promise.all(
      Array.from({ length: 150 }, (_, index) => chat(index % 2 === 0 ? first! : second!, key)),
    );
    const admitted = responses.filter((response) => response.status === 200);
    expect(admitted).toHaveLength(100);
    expect(responses.filter((response) => response.status === 429)).toHaveLength(50);
  });

  it('a dead Redis fails open by default: requests still pass, each decided as a fresh window', async () => {
    const { key } = await shared.createAccountWithKey();
    const url = await startProcess({
      DATABASE_URL: shared.databaseUrl,
      REDIS_URL: await deadRedisUrl(),
      OPENAI_BASE_URL: shared.simulator!.baseUrls.openai,
    });
    // Commands are never queued while Redis is down (enableOfflineQueue: false), so no request waits on it; a
    // queued check would hang until the test's timeout. Fail-open records nothing: every request sees a fresh
    // window (remaining = limit - 1), which also shows the decision did not come from Redis.
    for (let attempt = 0; attempt < 3; attempt++) {
      const response = await chat(url, key);
      expect(response.status).toBe(200);
      expect(response.headers.get('x-ratelimit-remaining-requests')).toBe('99');
    }
  });

  it('fail-closed answers 503 while Redis is unreachable', async () => {
    const { key } = await shared.createAccountWithKey();
    const url = await startProcess({
      DATABASE_URL: shared.databaseUrl,
      REDIS_URL: await deadRedisUrl(),
      RATE_LIMIT_FAIL_OPEN: 'false',
      OPENAI_BASE_URL: shared.simulator!.baseUrls.openai,
    });
    const response = await chat(url, key);
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('1');
  });
});
