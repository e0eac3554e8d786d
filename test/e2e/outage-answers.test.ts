/**
 * How an outage is answered: the database cannot be reached (PostgreSQL behind a TCP relay the test cuts) or Redis
 * is unreachable (a port the test has just proven free). Each client gets the same catalog entry in its own shape,
 * with retry-after; `/readyz` keeps a fail-open gateway ready. (Embedded SQLite admits from memory and journals
 * settlements while its file refuses writes: test/e2e/database-outages.test.ts.)
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { DashboardClient } from '../helpers/dashboard-client.js';
import { deadRedisUrl } from '../helpers/free-port.js';
import { startRelayedPostgres } from '../helpers/relayed-postgres.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

async function gateway(env: Record<string, string> = {}): Promise<TestGateway> {
  const harness = await startTestGateway({ env });
  cleanups.push(() => harness.close());
  return harness;
}

const chatBody = { model: 'beta-5.4', messages: [{ role: 'user', content: 'hi' }] };
const messagesBody = { model: 'beta-5.4', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] };

describe('answers while the database cannot be reached', () => {
  it('503 service_unavailable in the OpenAI shape, 529 overloaded_error in the Anthropic one, the dashboard shape on /api; all with retry-after', async () => {
    const postgres = await startRelayedPostgres();
    cleanups.push(() => postgres.close());
    const harness = await gateway({ DATABASE_URL: postgres.url });
    const { key } = await harness.createAccountWithKey();
    // Long enough for every check below, shorter than the 10 s between two announcements of the outage in the log.
    const outage = postgres.relay.refuse(8_000);

    const post = (path: string, body: unknown) =>
      fetch(`${harness.gateway.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const openai = await post('/v1/chat/completions', chatBody);
    expect(openai.status).toBe(503);
    expect(openai.headers.get('retry-after')).toBe('5');
    expect(await openai.json()).toEqual({
      error: {
        message: 'The gateway cannot reach its database right now. Please retry in a few seconds.',
        type: 'server_error',
        param: null,
        code: 'service_unavailable',
      },
    });
    const anthropic = await post('/v1/messages', { ...messagesBody, stream: true });
    expect(anthropic.status).toBe(529);
    expect(anthropic.headers.get('retry-after')).toBe('5');
    expect(await anthropic.json()).toEqual({
      type: 'error',
      error: {
        type: 'overloaded_error',
        message: 'The gateway cannot reach its database right now. Please retry in a few seconds.',
      },
      request_id: anthropic.headers.get('request-id'),
    });
    expect(anthropic.headers.get('x-should-retry')).toBe('true');

    // The official clients see a retryable server error (and would retry after retry-after).
    const openaiClient = new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
    await expect(
      openaiClient.chat.completions.create({ ...chatBody, messages: [{ role: 'user', content: 'hi' }] }),
    ).rejects.toMatchObject({ status: 503, code: 'service_unavailable' });
    const anthropicClient = new Anthropic({ apiKey: key, baseURL: harness.gateway.url, maxRetries: 0 });
    await expect(
      anthropicClient.messages.create({ ...messagesBody, messages: [{ role: 'user', content: 'hi' }] }),
    ).rejects.toMatchObject({ status: 529, error: { error: { type: 'overloaded_error' } } });

    const dashboard = new DashboardClient(harness.gateway.url);
    await dashboard.open();
    const registered = await dashboard.post('/api/auth/register', {
      email: 'outage@example.com',
      password: 'correct horse battery staple',
    });
    expect(registered.status).toBe(503);
    expect(registered.headers.get('retry-after')).toBe('5');
    expect(registered.json).toMatchObject({ error: { code: 'service_unavailable', retryAfterSeconds: 5 } });

    // Once it is back, requests pass; the log never called it an internal error.
    await outage;
    expect((await post('/v1/chat/completions', chatBody)).status).toBe(200);
    await harness.flushLogs();
    const logs = harness.logs.join('');
    expect(logs).not.toMatch(/"msg":"(internal error|dashboard API internal error)"/);
    expect(logs.match(/"msg":"storage unavailable/g)).toHaveLength(1);
  });
});

describe('answers while Redis is unreachable', () => {
  it('fail-open (the default): requests pass and /readyz stays ready, reporting redis degraded', async () => {
    const harness = await gateway({ REDIS_URL: await deadRedisUrl() });
    const { key } = await harness.createAccountWithKey();
    const ready = await fetch(`${harness.gateway.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({
      status: 'ready',
      checks: { storage: 'ok', settlement_journal: 'ok', redis: 'degraded' },
    });
    for (let i = 0; i < 5; i++) {
      const response = await fetch(`${harness.openaiBaseUrl}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(chatBody),
      });
      expect(response.status).toBe(200);
    }
    // One warning for the outage, not one per request.
    await harness.flushLogs();
    expect(harness.logs.join('').match(/"msg":"redis unavailable/g)).toHaveLength(1);
  });

  it('fail-closed: 503 (529 overloaded_error for Anthropic clients) with retry-after, and /readyz not ready', async () => {
    const harness = await gateway({ REDIS_URL: await deadRedisUrl(), RATE_LIMIT_FAIL_OPEN: 'false' });
    const { key } = await harness.createAccountWithKey();
    const ready = await fetch(`${harness.gateway.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toEqual({
      status: 'not_ready',
      checks: { storage: 'ok', settlement_journal: 'ok', redis: 'unavailable' },
    });
    const anthropic = await fetch(`${harness.gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify(messagesBody),
    });
    expect(anthropic.status).toBe(529);
    expect(anthropic.headers.get('retry-after')).toBe('1');
    expect(await anthropic.json()).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });
    const openai = await fetch(`${harness.openaiBaseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(chatBody),
    });
    expect(openai.status).toBe(503);
    expect(await openai.json()).toMatchObject({ error: { type: 'server_error', code: 'rate_limiter_unavailable' } });
    expect(harness.logs.join('')).not.toMatch(/"msg":"internal error"/);
  });
});
