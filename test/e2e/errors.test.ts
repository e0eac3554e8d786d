import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

let harness: TestGateway;
let key: string;

beforeAll(async () => {
  harness = await startTestGateway();
  ({ key } = await harness.createAccountWithKey());
});

afterAll(async () => {
  await harness?.close();
});

async function post(
  body: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: any; headers: Headers }> {
  const response = await fetch(`${harness.openaiBaseUrl}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body,
  });
  return { status: response.status, json: await response.json(), headers: response.headers };
}

function expectOpenAIError(json: any, type: string): void {
  expect(Object.keys(json.error).sort()).toEqual(['code', 'message', 'param', 'type']);
  expect(json.error.type).toBe(type);
  expect(typeof json.error.message).toBe('string');
}

describe('errors in the OpenAI shape', () => {
  it('unknown model → 400 naming the value and listing the valid ids', async () => {
    const { status, json } = await post(JSON.stringify({ model: 'gpt-9', messages: [{ role: 'user', content: 'x' }] }));
    expect(status).toBe(400);
    expectOpenAIError(json, 'invalid_request_error');
    expect(json.error.param).toBe('model');
    expect(json.error.message).toContain("'gpt-9'");
    for (const id of ['alpha-sonnet-5', 'beta-5.4', 'o3', 'gamma-2.5-pro', 'delta-r1'])
      expect(json.error.message).toContain(id);
  });

  it('missing model → 400 with the valid ids', async () => {
    const { status, json } = await post(JSON.stringify({ messages: [{ role: 'user', content: 'x' }] }));
    expect(status).toBe(400);
    expect(json.error.message).toMatch(/required.*beta-5\.4/);
  });

  it('malformed JSON → 400', async () => {
    const { status, json } = await post('{"model": "beta-5.4", "messages": [');
    expect(status).toBe(400);
    expectOpenAIError(json, 'invalid_request_error');
    expect(json.error.message).toMatch(/not valid JSON/);
  });

  it('wrong content type → 400', async () => {
    const { status, json } = await post('model=beta-5.4', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(status).toBe(400);
    expect(json.error.message).toMatch(/Content-Type/);
  });

  it('prototype-pollution keys are refused, not merged', async () => {
    const { status } = await post(
      '{"model":"beta-5.4","messages":[{"role":"user","content":"x"}],"__proto__":{"polluted":true}}',
    );
    expect(status).toBe(400);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('prototype keys are refused in long bodies too, which are checked by walking the parsed value', async () => {
    const prompt = 'x'.repeat(4_000);
    const request = (extra: string) =>
      `{"model":"beta-5.4","messages":[{"role":"user","content":"${prompt}"}],"tools":[{"type":"function","function":{"name":"f","parameters":${extra}}}]}`;
    for (const poisoned of [
      '{"type":"object","__proto__":{"polluted":true}}',
      '{"type":"object","properties":{"a":{"constructor":{"prototype":{"polluted":true}}}}}',
    ]) {
      const { status, json } = await post(request(poisoned));
      expect(status).toBe(400);
      expectOpenAIError(json, 'invalid_request_error');
      expect(json.error.message).toMatch(/not valid JSON/);
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const malformed = await post(request('{"type":'));
    expect(malformed.status).toBe(400);
    expect(malformed.json.error.message).toMatch(/not valid JSON/);
    // A schema may name its properties "constructor" and "prototype": only the pair as the parser refuses it is refused.
    const innocent = '{"type":"object","properties":{"constructor":{"type":"string"},"prototype":{"type":"string"}}}';
    expect((await post(request(innocent))).status).toBe(200);
    expect((await post(`\ufeff${request(innocent)}`)).status).toBe(200);
  });

  it('missing key → 401; malformed and unknown keys → 401', async () => {
    for (const authorization of [undefined, 'Bearer nope', `Bearer sk-tg-${'A'.repeat(43)}`, 'Basic abc']) {
      const response = await fetch(`${harness.openaiBaseUrl}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(authorization === undefined ? {} : { authorization }) },
        body: JSON.stringify({ model: 'beta-5.4', messages: [{ role: 'user', content: 'x' }] }),
      });
      expect(response.status).toBe(401);
      expectOpenAIError(await response.json(), 'invalid_request_error');
    }
  });

  it('the SDK raises the matching error classes', async () => {
    const client = new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
    await expect(
      client.chat.completions.create({ model: 'nope', messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    const anonymous = new OpenAI({ apiKey: 'sk-tg-wrong', baseURL: harness.openaiBaseUrl, maxRetries: 0 });
    await expect(anonymous.models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it('a bad request makes no upstream call and records no usage', async () => {
    const { accountId, key: freshKey } = await harness.createAccountWithKey();
    const response = await fetch(`${harness.openaiBaseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${freshKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'beta-5.4', messages: [{ role: 'user', content: 'x' }], temperature: 7 }),
    });
    expect(response.status).toBe(400);
    expect(await harness.gateway.storage.usage.listByAccount(accountId, 10)).toEqual([]);
  });

  it('unknown paths → 404 in the same shape', async () => {
    const response = await fetch(`${harness.gateway.url}/v1/nothing-here`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(response.status).toBe(404);
    expectOpenAIError(await response.json(), 'invalid_request_error');
  });

  it('every response carries an x-request-id', async () => {
    const { headers } = await post('{}');
    expect(headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{32}$/);
  });
});
