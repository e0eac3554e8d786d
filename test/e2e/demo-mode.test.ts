import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

let harness: TestGateway;

beforeAll(async () => {
  harness = await startTestGateway({ demo: true });
});

afterAll(async () => {
  await harness?.close();
});

describe('demo mode', () => {
  it('with no vendor configured, serves from the in-process simulator', async () => {
    expect(harness.gateway.config.demoMode).toBe(true);
    expect(harness.gateway.simulatorUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const { key } = await harness.createAccountWithKey();
    const client = new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
    const completion = await client.chat.completions.create({
      model: 'o3',
      messages: [{ role: 'user', content: 'demo?' }],
    });
    expect(completion.choices[0]!.message.content).toBeTruthy();
  });
});
