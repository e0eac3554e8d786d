import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../canonical/errors.js';
import { decodeOpenAIChatRequest } from './openai-decode-request.js';

const FIVE = { type: 'ephemeral' };
const HOUR = { type: 'ephemeral', ttl: '1h' };
const decode = (body: Record<string, unknown>) => decodeOpenAIChatRequest({ model: 'alpha-sonnet-5', ...body }).request;

function refusal(body: Record<string, unknown>): GatewayError {
  try {
    decode(body);
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayError);
    return error as GatewayError;
  }
  throw new Error('the request was accepted');
}

describe('decodeOpenAIChatRequest: cache_control as OpenRouter and LiteLLM accept it', () => {
  it('decodes it on content parts of every role', () => {
    const request = decode({
      messages: [
        { role: 'system', content: [{ type: 'text', text: 'Rules.', cache_control: HOUR }] },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Look:' },
            { type: 'image_url', image_url: { url: 'https://x/y.png' }, cache_control: FIVE },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'One ', cache_control: FIVE },
            { type: 'text', text: 'two.' },
          ],
        },
        { role: 'user', content: [{ type: 'text', text: 'Go on.', cache_control: { type: 'ephemeral', ttl: '5m' } }] },
      ],
    });
    expect(request.system).toEqual([{ type: 'text', text: 'Rules.', cache: { ttl: '1h' } }]);
    expect(request.messages[0]!.content).toEqual([
      { type: 'text', text: 'Look:' },
      { type: 'image', source: { kind: 'url', url: 'https://x/y.png' }, cache: { ttl: '5m' } },
    ]);
    // The breakpoint stays after the part that carried it, not after the whole joined text.
    expect(request.messages[1]!.content).toEqual([
      { type: 'text', text: 'One ', cache: { ttl: '5m' } },
      { type: 'text', text: 'two.' },
    ]);
    expect(request.messages[2]!.content).toEqual([{ type: 'text', text: 'Go on.', cache: { ttl: '5m' } }]);
  });

  it('decodes it on a message (its last block), on tools and at the top level', () => {
    const request = decode({
      messages: [
        { role: 'system', content: 'Rules.', cache_control: HOUR },
        { role: 'user', content: 'What time is it?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'now', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'noon', cache_control: FIVE },
      ],
      tools: [
        { type: 'function', function: { name: 'now', parameters: { type: 'object' } }, cache_control: HOUR },
        { type: 'function', function: { name: 'later', cache_control: HOUR } },
      ],
      cache_control: FIVE,
    });
    expect(request.system).toEqual([{ type: 'text', text: 'Rules.', cache: { ttl: '1h' } }]);
    expect(request.messages[1]!.content[0]).not.toHaveProperty('cache');
    expect(request.messages[2]!.content[0]).toMatchObject({ type: 'tool-result', cache: { ttl: '5m' } });
    expect(request.tools?.map((tool) => tool.cache)).toEqual([{ ttl: '1h' }, { ttl: '1h' }]);
    expect(request.cache).toEqual({ ttl: '5m' });
    expect(request.extensions).toEqual({});
  });

  it("refuses a bad type or ttl, a fifth breakpoint and 1h after 5m, naming the field in the caller's body", () => {
    expect(
      refusal({ messages: [{ role: 'user', content: [{ type: 'text', text: 'a', cache_control: { type: 'x' } }] }] })
        .param,
    ).toBe('messages[0].content[0].cache_control.type');
    expect(
      refusal({ messages: [{ role: 'user', content: 'a', cache_control: { type: 'ephemeral', ttl: '24h' } }] }).param,
    ).toBe('messages[0].cache_control.ttl');
    const parts = [1, 2, 3, 4, 5].map((n) => ({ type: 'text', text: String(n), cache_control: FIVE }));
    expect(refusal({ messages: [{ role: 'user', content: parts }] }).param).toBe(
      'messages[0].content[4].cache_control',
    );
    const order = refusal({
      messages: [
        { role: 'system', content: 'a', cache_control: FIVE },
        { role: 'user', content: 'b', cache_control: HOUR },
      ],
    });
    expect(order.status).toBe(400);
    expect(order.param).toBe('messages[1].cache_control');
    // Tools come before the system prompt in Anthropic's order.
    expect(
      refusal({
        messages: [
          { role: 'system', content: 'a', cache_control: HOUR },
          { role: 'user', content: 'b' },
        ],
        tools: [{ type: 'function', function: { name: 'f' }, cache_control: FIVE }],
      }).param,
    ).toBe('messages[0].cache_control');
  });
});
