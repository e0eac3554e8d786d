import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../canonical/errors.js';
import { decodeAnthropicMessagesRequest } from './anthropic-decode-request.js';

const base = { model: 'alpha-sonnet-5', max_tokens: 100 };
const FIVE = { type: 'ephemeral' };
const HOUR = { type: 'ephemeral', ttl: '1h' };
const text = (value: string, cache_control?: object) => ({ type: 'text', text: value, cache_control });

function refusal(body: unknown): GatewayError {
  try {
    decodeAnthropicMessagesRequest(body);
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayError);
    return error as GatewayError;
  }
  throw new Error('the request was accepted');
}

describe('decodeAnthropicMessagesRequest: prompt-cache breakpoints', () => {
  it('decodes cache_control on system blocks, images, documents, tools and the top level', () => {
    const request = decodeAnthropicMessagesRequest({
      ...base,
      system: [text('Rules.', HOUR), text('More.')],
      tools: [{ name: 'f', input_schema: { type: 'object' }, cache_control: HOUR }],
      cache_control: { type: 'ephemeral', ttl: '5m' },
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { type: 'url', url: 'https://x/y.png' }, cache_control: HOUR },
            { type: 'document', source: { type: 'url', url: 'https://x/y.pdf' }, cache_control: FIVE },
          ],
        },
      ],
    });
    expect(request.system).toEqual([
      { type: 'text', text: 'Rules.', cache: { ttl: '1h' } },
      { type: 'text', text: 'More.' },
    ]);
    expect(request.tools?.[0]?.cache).toEqual({ ttl: '1h' });
    expect(request.cache).toEqual({ ttl: '5m' });
    expect(request.extensions).toEqual({});
    expect(request.messages[0]!.content.map((block) => block.type !== 'reasoning' && block.cache)).toEqual([
      { ttl: '1h' },
      { ttl: '5m' },
    ]);
  });

  it('decodes cache_control on tool_use, tool_result and the blocks inside a tool_result', () => {
    const request = decodeAnthropicMessagesRequest({
      ...base,
      messages: [
        { role: 'user', content: 'Time?' },
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 'toolu_1', name: 'f', input: {}, cache_control: FIVE }],
        },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [text('ok', FIVE)], cache_control: FIVE }],
        },
      ],
    });
    const [, call, result] = request.messages;
    expect(call!.content[0]).toMatchObject({ type: 'tool-call', cache: { ttl: '5m' } });
    expect(result!.content[0]).toEqual({
      type: 'tool-result',
      toolCallId: 'toolu_1',
      content: [{ type: 'text', text: 'ok', cache: { ttl: '5m' } }],
      isError: false,
      cache: { ttl: '5m' },
    });
  });

  it("keeps a cache_control's other members (Claude Code's beta scope) for an Anthropic upstream", () => {
    const request = decodeAnthropicMessagesRequest({
      ...base,
      system: [text('Rules.', { type: 'ephemeral', ttl: '1h', scope: 'global' })],
      cache_control: { type: 'ephemeral', evict_on_complete: true },
      messages: [{ role: 'user', content: 'a' }],
    });
    expect(request.system[0]!.cache).toEqual({ ttl: '1h', anthropicFields: { scope: 'global' } });
    expect(request.cache).toEqual({ ttl: '5m', anthropicFields: { evict_on_complete: true } });
  });

  it('takes cache_control: null as no breakpoint', () => {
    const request = decodeAnthropicMessagesRequest({
      ...base,
      cache_control: null,
      messages: [{ role: 'user', content: [text('a', null as unknown as object)] }],
    });
    expect(request.cache).toBeUndefined();
    expect(request.messages[0]!.content[0]).toEqual({ type: 'text', text: 'a' });
  });

  it('refuses an unknown type and a ttl other than 5m or 1h, naming the field', () => {
    const type = refusal({
      ...base,
      system: [text('a', { type: 'persistent' })],
      messages: [{ role: 'user', content: 'b' }],
    });
    expect(type.status).toBe(400);
    expect(type.param).toBe('system[0].cache_control.type');
    const ttl = refusal({
      ...base,
      messages: [{ role: 'user', content: [text('a', { type: 'ephemeral', ttl: '10m' })] }],
    });
    expect(ttl.param).toBe('messages[0].content[0].cache_control.ttl');
    expect(ttl.message).toContain('"5m", "1h"');
    expect(
      refusal({ ...base, cache_control: { type: 'ephemeral', ttl: '2h' }, messages: [{ role: 'user', content: 'a' }] })
        .param,
    ).toBe('cache_control.ttl');
    expect(
      refusal({
        ...base,
        tools: [{ name: 'f', input_schema: { type: 'object' }, cache_control: { type: 'forever' } }],
        messages: [{ role: 'user', content: 'a' }],
      }).param,
    ).toBe('tools[0].cache_control.type');
  });

  it('refuses a fifth breakpoint, naming it; the top-level one counts unless the last block already has one', () => {
    const four = [text('1', FIVE), text('2', FIVE), text('3', FIVE), text('4', FIVE)];
    expect(() =>
      decodeAnthropicMessagesRequest({ ...base, messages: [{ role: 'user', content: four }] }),
    ).not.toThrow();
    const fifth = refusal({ ...base, messages: [{ role: 'user', content: [...four, text('5', FIVE)] }] });
    expect(fifth.param).toBe('messages[0].content[4].cache_control');
    expect(fifth.message).toContain('at most 4');
    const topLevel = refusal({
      ...base,
      cache_control: FIVE,
      messages: [{ role: 'user', content: [...four, text('5')] }],
    });
    expect(topLevel.param).toBe('cache_control');
    // The automatic breakpoint would land on the last block, which already carries one: still four.
    expect(() =>
      decodeAnthropicMessagesRequest({ ...base, cache_control: FIVE, messages: [{ role: 'user', content: four }] }),
    ).not.toThrow();
    // Tools come first in Anthropic's order: the fifth is the last message block.
    const withTool = refusal({
      ...base,
      tools: [{ name: 'f', input_schema: { type: 'object' }, cache_control: FIVE }],
      messages: [{ role: 'user', content: four }],
    });
    expect(withTool.param).toBe('messages[0].content[3].cache_control');
  });

  it('refuses a 1-hour breakpoint after a 5-minute one in the order tools, system, messages', () => {
    const error = refusal({
      ...base,
      tools: [{ name: 'f', input_schema: { type: 'object' }, cache_control: FIVE }],
      system: [text('a', HOUR)],
      messages: [{ role: 'user', content: 'b' }],
    });
    expect(error.param).toBe('system[0].cache_control');
    expect(error.message).toContain("'tools[0].cache_control'");
    expect(
      refusal({ ...base, system: [text('a', FIVE)], cache_control: HOUR, messages: [{ role: 'user', content: 'b' }] })
        .param,
    ).toBe('cache_control');
    // 1 hour before 5 minutes is the allowed order.
    expect(() =>
      decodeAnthropicMessagesRequest({
        ...base,
        tools: [{ name: 'f', input_schema: { type: 'object' }, cache_control: HOUR }],
        system: [text('a', HOUR)],
        messages: [{ role: 'user', content: [text('b', FIVE)] }],
        cache_control: FIVE,
      }),
    ).not.toThrow();
  });
});
