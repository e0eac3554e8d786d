import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

let harness: TestGateway;
let client: Anthropic;
let key: string;

beforeAll(async () => {
  harness = await startTestGateway();
  ({ key } = await harness.createAccountWithKey());
  client = new Anthropic({ apiKey: key, baseURL: harness.gateway.url, maxRetries: 0 });
});

afterAll(async () => {
  await harness?.close();
});

const PARAMS = {
  model: 'beta-5.4',
  max_tokens: 200,
  messages: [{ role: 'user' as const, content: 'Tell me about toll gates.' }],
};

describe('POST /v1/messages through the official @anthropic-ai/sdk', () => {
  it('returns an Anthropic Message with usage under the public model id', async () => {
    const message = await client.messages.create(PARAMS);
    expect(message.type).toBe('message');
    expect(message.role).toBe('assistant');
    expect(message.model).toBe('beta-5.4');
    expect(message.id).toMatch(/^msg_/);
    expect(message.stop_reason).toBe('end_turn');
    expect(message.content[0]).toMatchObject({ type: 'text' });
    expect((message.content[0] as Anthropic.TextBlock).text.length).toBeGreaterThan(0);
    expect(message.usage.input_tokens).toBeGreaterThan(0);
    expect(message.usage.output_tokens).toBeGreaterThan(0);
  });

  it("a stream assembled by the SDK's finalMessage() equals the non-stream reply", async () => {
    const whole = await client.messages.create(PARAMS);
    const final = await client.messages.stream(PARAMS).finalMessage();
    expect(final.content).toEqual(whole.content);
    expect(final.stop_reason).toBe(whole.stop_reason);
    expect(final.usage.output_tokens).toBe(whole.usage.output_tokens);
    expect(final.usage.input_tokens).toBe(whole.usage.input_tokens);
  });

  it('streams the full Anthropic event sequence, then data: [DONE], which the SDK ignores', async () => {
    const response = await fetch(`${harness.gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ ...PARAMS, stream: true }),
    });
    const text = await response.text();
    const names = [...text.matchAll(/^event: (\w+)$/gm)].map((match) => match[1]);
    expect(names[0]).toBe('message_start');
    expect(names[1]).toBe('ping');
    expect(names).toContain('content_block_start');
    expect(names).toContain('content_block_delta');
    expect(names.slice(-3)).toEqual(['content_block_stop', 'message_delta', 'message_stop']);
    expect(text.endsWith('event: message_stop\ndata: {"type":"message_stop"}\n\ndata: [DONE]\n\n')).toBe(true);
    // Every data line but [DONE] repeats its event name as `type`.
    for (const frame of text.split('\n\n').filter((part) => part.startsWith('event:'))) {
      const [eventLine, dataLine] = frame.split('\n');
      expect(JSON.parse(dataLine!.slice('data: '.length)).type).toBe(eventLine!.slice('event: '.length));
    }
    // The SDK reads the same stream without tripping on [DONE].
    const events: string[] = [];
    for await (const event of await client.messages.create({ ...PARAMS, stream: true })) events.push(event.type);
    expect(events[events.length - 1]).toBe('message_stop');
  });

  it('accepts the key as Authorization: Bearer (authToken) as well as x-api-key', async () => {
    const bearer = new Anthropic({ authToken: key, apiKey: null, baseURL: harness.gateway.url, maxRetries: 0 });
    await expect(bearer.messages.create(PARAMS)).resolves.toMatchObject({ type: 'message' });
  });

  it('counts input tokens', async () => {
    const counted = await client.messages.countTokens({ model: 'beta-5.4', messages: PARAMS.messages });
    const message = await client.messages.create(PARAMS);
    expect(counted.input_tokens).toBeGreaterThan(0);
    expect(Math.abs(counted.input_tokens - message.usage.input_tokens)).toBeLessThanOrEqual(8);
  });

  it('lists models in the Anthropic page shape for Anthropic clients', async () => {
    const page = await client.models.list();
    expect(page.data.map((model) => model.id)).toContain('alpha-sonnet-5');
    expect(page.data[0]).toMatchObject({ type: 'model' });
  });
});

describe('errors in the Anthropic shape', () => {
  async function post(body: unknown, headers: Record<string, string> = { 'x-api-key': key }) {
    const response = await fetch(`${harness.gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'anthropic-version': '2023-06-01', 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    return {
      status: response.status,
      json: (await response.json()) as { type: string; error: { type: string; message: string } },
    };
  }

  it.each([
    ['missing max_tokens', { model: 'beta-5.4', messages: [{ role: 'user', content: 'x' }] }, /max_tokens/],
    [
      'an empty text block',
      { ...PARAMS, messages: [{ role: 'user', content: [{ type: 'text', text: '  ' }] }] },
      /non-whitespace/,
    ],
    [
      'only system messages',
      { ...PARAMS, messages: [{ role: 'system', content: 'x' }] },
      /at least one user or assistant message/,
    ],
    ['temperature above 1', { ...PARAMS, temperature: 1.5 }, /temperature/],
    [
      'a tool_result with no tool_use',
      {
        ...PARAMS,
        messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'x' }] }],
      },
      /not a tool_use of the previous assistant message/,
    ],
    [
      'a tool_use without its result',
      {
        ...PARAMS,
        messages: [
          { role: 'user', content: 'x' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'f', input: {} }] },
          { role: 'user', content: 'forgot the result' },
        ],
      },
      /without tool_result/,
    ],
    [
      'an image with a bad media type',
      {
        ...PARAMS,
        messages: [
          {
            role: 'user',
            content: [{ type: 'image', source: { type: 'base64', media_type: 'image/bmp', data: 'AAAA' } }],
          },
        ],
      },
      /media_type/,
    ],
    [
      'too many stop sequences',
      { ...PARAMS, stop_sequences: Array.from({ length: 17 }, (_, i) => `s${i}`) },
      /at most 16/,
    ],
    ['an unknown model', { ...PARAMS, model: 'claude-3' }, /claude-3.*alpha-sonnet-5/],
    [
      'a thinking budget that is not an integer',
      { ...PARAMS, max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 1500.5 } },
      /thinking\.budget_tokens/,
    ],
  ])('%s → 400 invalid_request_error', async (_name, body, message) => {
    const { status, json } = await post(body);
    expect(status).toBe(400);
    expect(json.type).toBe('error');
    expect(json.error.type).toBe('invalid_request_error');
    expect(json.error.message).toMatch(message);
  });

  it('malformed JSON → 400 in the Anthropic shape', async () => {
    const { status, json } = await post('{"model":');
    expect(status).toBe(400);
    expect(json).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
  });

  it('a bad key → 401 authentication_error; the SDK raises AuthenticationError', async () => {
    const { status, json } = await post(PARAMS, { 'x-api-key': 'sk-tg-nope' });
    expect(status).toBe(401);
    expect(json.error.type).toBe('authentication_error');
    const stranger = new Anthropic({ apiKey: 'sk-tg-nope', baseURL: harness.gateway.url, maxRetries: 0 });
    await expect(stranger.messages.create(PARAMS)).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
  });

  it('vendor overload → 529 overloaded_error for Anthropic clients', async () => {
    const error = (await client.messages
      .create({ ...PARAMS, messages: [{ role: 'user', content: 'hi [[sim fault=error status=503]]' }] })
      .catch((e: unknown) => e)) as InstanceType<typeof Anthropic.APIError>;
    expect(error.status).toBe(529);
    expect((error.error as { error: { type: string } }).error.type).toBe('overloaded_error');
  });

  it('a mid-stream vendor failure reaches the SDK as an error event', async () => {
    const stream = client.messages.stream({
      ...PARAMS,
      messages: [{ role: 'user', content: 'hi [[sim fault=disconnect-mid-stream after=2]]' }],
    });
    await expect(stream.finalMessage()).rejects.toThrow(/before the reply was complete/);
  });
});
