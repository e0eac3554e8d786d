import { describe, expect, it } from 'vitest';
import { ResponseAccumulator } from '../canonical/accumulate.js';
import { GatewayError } from '../canonical/errors.js';
import type { CanonicalRequest } from '../canonical/request.js';
import { emptyUsage } from '../canonical/usage.js';
import {
  errorType,
  finishReasonName,
  providerName,
  requestAttributes,
  responseAttributes,
  routeOperation,
  usageAttributes,
} from './genai-attributes.js';

function request(overrides: Partial<CanonicalRequest> = {}): CanonicalRequest {
  return {
    model: 'alpha-sonnet-5',
    system: [],
    messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
    sampling: {},
    stream: false,
    extensions: {},
    extensionsProtocol: 'openai-chat',
    ...overrides,
  };
}

describe('GenAI attribute mapping', () => {
  it('names each client route by its protocol and operation, and no other route', () => {
    expect(routeOperation('/v1/chat/completions')).toEqual({ protocol: 'openai-chat', operation: 'chat' });
    expect(routeOperation('/v1/messages')).toEqual({ protocol: 'anthropic-messages', operation: 'chat' });
    expect(routeOperation('/v1/responses')).toEqual({ protocol: 'openai-responses', operation: 'chat' });
    for (const route of ['/v1beta/models/:model:generateContent', '/v1/models/:model:streamGenerateContent'])
      expect(routeOperation(route)).toEqual({ protocol: 'gemini-generate', operation: 'generate_content' });
    for (const route of ['/v1/messages/count_tokens', '/v1beta/models/:model:countTokens', '/v1/models', '/metrics'])
      expect(routeOperation(route)).toBeUndefined();
  });

  it("gives the conventions' provider names", () => {
    expect(providerName('anthropic')).toBe('anthropic');
    expect(providerName('openai')).toBe('openai');
    expect(providerName('gemini')).toBe('gcp.gemini');
    expect(providerName('deepseek')).toBe('deepseek');
  });

  it('records the sampling parameters the client set, and leaves out those it did not', () => {
    expect(requestAttributes(request())).toEqual({
      'gen_ai.request.model': 'alpha-sonnet-5',
      'gen_ai.request.stream': false,
    });
    expect(
      requestAttributes(request({ stream: true, maxOutputTokens: 300, sampling: { temperature: 0, topP: 0.9 } })),
    ).toEqual({
      'gen_ai.request.model': 'alpha-sonnet-5',
      'gen_ai.request.stream': true,
      'gen_ai.request.max_tokens': 300,
      'gen_ai.request.temperature': 0,
      'gen_ai.request.top_p': 0.9,
    });
  });

  it('counts cached prompt tokens in input_tokens and gives the cache reads and writes apart', () => {
    const usage = { ...emptyUsage(), inputTokens: 10, cacheReadTokens: 200, cacheWriteTokens: 30, outputTokens: 7 };
    expect(usageAttributes(usage)).toEqual({
      'gen_ai.usage.input_tokens': 240,
      'gen_ai.usage.output_tokens': 7,
      'gen_ai.usage.cache_read.input_tokens': 200,
      'gen_ai.usage.cache_creation.input_tokens': 30,
    });
    expect(usageAttributes({ ...usage, reasoningTokens: 5 })['gen_ai.usage.reasoning.output_tokens']).toBe(5);
  });

  it("reads the reply's id, model and every choice's finish reason", () => {
    const accumulator = new ResponseAccumulator();
    accumulator.apply({ type: 'response-start', id: 'msg_1', model: 'claude-x', created: 1 });
    accumulator.apply({ type: 'finish', reason: 'tool-calls', rawReason: 'tool_use' });
    accumulator.apply({ type: 'text-start', blockId: 'b', choice: 1 });
    accumulator.apply({ type: 'finish', reason: 'length', rawReason: 'max_tokens', choice: 1 });
    expect(responseAttributes(accumulator.response)).toEqual({
      'gen_ai.response.id': 'msg_1',
      'gen_ai.response.model': 'claude-x',
      'gen_ai.response.finish_reasons': ['tool_calls', 'length'],
    });
    // A reply cut before it started has none of them.
    expect(responseAttributes(new ResponseAccumulator().response)).toEqual({});
  });

  it('names finish reasons as clients know them', () => {
    expect(finishReasonName('stop')).toBe('stop');
    expect(finishReasonName('stop-sequence')).toBe('stop');
    expect(finishReasonName('content-filter')).toBe('content_filter');
    expect(finishReasonName('length')).toBe('length');
  });

  it("types an error by the gateway catalog's code, else its class", () => {
    expect(errorType(new GatewayError('upstream_timeout', 'slow'))).toBe('upstream_timeout');
    expect(errorType(new TypeError('x'))).toBe('TypeError');
    expect(errorType('a string')).toBe('_OTHER');
  });
});
