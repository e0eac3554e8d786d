import Database from 'better-sqlite3';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

let harness: TestGateway;

beforeAll(async () => {
  harness = await startTestGateway();
});

afterAll(async () => {
  await harness?.close().catch(() => undefined);
});

describe('internal faults', () => {
  it('a storage failure is a 500 with no stack trace, path or secret in the body', async () => {
    const { key } = await harness.createAccountWithKey();
    // A store that answers but fails every admission: the holds table is gone (as a botched manual repair would leave
    // it). Not an outage, so no 503: the gateway's own fault, answered without a word of its internals.
    const database = new Database(harness.databaseUrl.slice('sqlite:'.length));
    database.exec('drop table reservations');
    database.close();
    const response = await fetch(`${harness.openaiBaseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'beta-5.4', messages: [{ role: 'user', content: 'x' }] }),
    });
    expect(response.status).toBe(500);
    const text = await response.text();
    expect(JSON.parse(text)).toEqual({
      error: {
        message: 'The gateway hit an internal error. Please retry.',
        type: 'server_error',
        param: null,
        code: 'internal_error',
      },
    });
    expect(text).not.toMatch(/at |\.ts|\.js|sqlite|sk-tg/i);
    // The process writes its log asynchronously: the line may land just after the reply.
    await expect.poll(() => harness.logs.join('')).toMatch(/internal error/);
    const client = new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
    await expect(
      client.chat.completions.create({ model: 'beta-5.4', messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toBeInstanceOf(OpenAI.InternalServerError);
  });
});
