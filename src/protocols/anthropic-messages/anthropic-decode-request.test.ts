import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../canonical/errors.js';
import { decodeAnthropicMessagesRequest } from './anthropic-decode-request.js';

const base = { model: 'alpha-sonnet-5', max_tokens: 100 };
const user = (text: string) => ({ role: 'user', content: text });

function refusal(body: unknown): GatewayError {
  try {
    decodeAnthropicMessagesRequest(body);
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayError);
    return error as GatewayError;
  }
  throw new Error('the request was accepted');
}

describe('decodeAnthropicMessagesRequest: the current Messages API', () => {
  it('keeps system messages where they are; leading ones become the system prompt', () => {
    const request = decodeAnthropicMessagesRequest({
      ...base,
      system: 'Top.',
      messages: [
        { role: 'system', content: 'Also top.' },
        user('Hi'),
        {
          role: 'system',
          content: [{ type: 'text', text: 'Answer in French.', cache_control: { type: 'ephemeral' } }],
        },
      ],
    });
    expect(request.system).toEqual([
      { type: 'text', text: 'Top.' },
      { type: 'text', text: 'Also top.' },
    ]);
    expect(request.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Hi' }] },
      { role: 'system', content: [{ type: 'text', text: 'Answer in French.', cache: { ttl: '5m' } }] },
    ]);
  });

  it('keeps defer_loading on a tool definition (tool search loads it later)', () => {
    const request = decodeAnthropicMessagesRequest({
      ...base,
      messages: [user('Hi')],
      tools: [{ name: 'later', input_schema: { type: 'object' }, defer_loading: true }],
    });
    expect(request.tools).toEqual([{ name: 'later', parameters: { type: 'object' }, deferLoading: true }]);
  });

  it('drops a clear_at: next_user_message system message once a user message follows it', () => {
    const request = decodeAnthropicMessagesRequest({
      ...base,
      messages: [
        user('a'),
        { role: 'system', content: 'only for the next turn', clear_at: 'next_user_message' },
        { role: 'assistant', content: 'b' },
        user('c'),
      ],
    });
    expect(request.messages.map((message) => message.role)).toEqual(['user', 'assistant', 'user']);
  });

  it('refuses a system message that is empty, not text, or between a tool_use and its result, naming the field', () => {
    expect(refusal({ ...base, messages: [user('a'), { role: 'system', content: '  ' }] }).param).toBe(
      'messages[1].content',
    );
    expect(refusal({ ...base, messages: [user('a'), { role: 'system', content: [] }] }).param).toBe(
      'messages[1].content',
    );
    const image = refusal({
      ...base,
      messages: [
        user('a'),
        { role: 'system', content: [{ type: 'image', source: { type: 'url', url: 'https://x/y.png' } }] },
      ],
    });
    expect(image.param).toBe('messages[1].content[0].type');
    const call = { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'f', input: {} }] };
    const result = { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'ok' }] };
    expect(refusal({ ...base, messages: [user('a'), call, { role: 'system', content: 'x' }, result] }).param).toBe(
      'messages[2]',
    );
  });

  it('decodes output_config: the format as a JSON-schema response format, the effort as reasoning effort', () => {
    const schema = { type: 'object', properties: { city: { type: 'string' } } };
    const request = decodeAnthropicMessagesRequest({
      ...base,
      messages: [user('a')],
      thinking: { type: 'adaptive', display: 'updates' },
      output_config: {
        effort: 'high',
        format: { type: 'json_schema', schema },
        task_budget: { type: 'tokens', total: 900 },
      },
    });
    expect(request.responseFormat).toEqual({ type: 'json_schema', name: 'output', schema });
    expect(request.reasoning).toEqual({ enabled: true, mode: 'adaptive', display: 'updates', effort: 'high' });
    expect(request.extensions).toEqual({ 'output_config.task_budget': { type: 'tokens', total: 900 } });
  });

  it('refuses an output format whose schema is not an object schema, naming it', () => {
    const error = refusal({
      ...base,
      messages: [user('a')],
      output_config: { format: { type: 'json_schema', schema: { type: 'array' } } },
    });
    expect(error.param).toBe('output_config.format.schema.type');
    expect(error.message).toContain('must be one of "object"');
  });

  it('refuses a thread with the error code the SDK recognises', () => {
    const error = refusal({
      ...base,
      messages: [user('a')],
      thread: { type: 'continue', previous_message_id: 'msg_nothing' },
    });
    expect(error.status).toBe(400);
    expect(error.param).toBe('thread');
    expect(error.details).toEqual({ error_code: 'thread_unsupported_request', unsupported: [] });
    // `thread: null` is the same as no thread.
    expect(() => decodeAnthropicMessagesRequest({ ...base, messages: [user('a')], thread: null })).not.toThrow();
  });

  it('keeps the fields it has no canonical slot for as extensions, with the beta header and query', () => {
    const request = decodeAnthropicMessagesRequest(
      {
        ...base,
        messages: [user('a')],
        context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
        container: 'container_1',
        mcp_servers: [{ type: 'url', name: 'x', url: 'https://mcp.example' }],
        service_tier: 'auto',
        diagnostics: null,
      },
      { anthropicBeta: 'context-management-2025-06-27,some-future-beta', betaQuery: true },
    );
    expect(Object.keys(request.extensions).sort()).toEqual([
      '?beta=true',
      'anthropic-beta',
      'container',
      'context_management',
      'mcp_servers',
      'service_tier',
    ]);
  });
});

describe('decodeAnthropicMessagesRequest: server tools', () => {
  const search = {
    type: 'web_search_20250305',
    name: 'web_search',
    max_uses: 3,
    blocked_domains: ['spam.example'],
    user_location: { type: 'approximate', country: 'PT', city: null },
  };

  it('keeps Anthropic’s own tools apart from the client’s, with what a web search means', () => {
    const request = decodeAnthropicMessagesRequest({
      ...base,
      messages: [user('Hi')],
      tools: [
        { name: 'lookup', input_schema: { type: 'object' } },
        search,
        { type: 'code_execution_20250825', name: 'code_execution' },
        { type: 'text_editor_20250728', name: 'str_replace_based_edit_tool', max_characters: 1000 },
      ],
    });
    expect(request.tools?.map((tool) => tool.name)).toEqual(['lookup']);
    expect(request.serverTools).toEqual([
      {
        kind: 'web-search',
        label: 'web_search_20250305',
        param: 'tools[1]',
        webSearch: { maxUses: 3, blockedDomains: ['spam.example'], userLocation: { country: 'PT' } },
        anthropicTool: search,
      },
      expect.objectContaining({ kind: 'anthropic-only', label: 'code_execution_20250825', param: 'tools[2]' }),
      expect.objectContaining({ kind: 'anthropic-only', label: 'text_editor_20250728', param: 'tools[3]' }),
    ]);
  });

  it('refuses malformed parameters by the field, as Anthropic does', () => {
    expect(refusal({ ...base, messages: [user('Hi')], tools: [{ ...search, max_uses: 0 }] }).param).toBe(
      'tools[0].max_uses',
    );
    expect(refusal({ ...base, messages: [user('Hi')], tools: [{ ...search, name: 'search' }] }).param).toBe(
      'tools[0].name',
    );
    expect(
      refusal({ ...base, messages: [user('Hi')], tools: [{ ...search, allowed_domains: ['a.example'] }] }).param,
    ).toBe('tools[0].blocked_domains');
    expect(
      refusal({ ...base, messages: [user('Hi')], tools: [{ type: 'web_search_19990101', name: 'x' }] }).param,
    ).toBe('tools[0].type');
  });

  it('decodes search blocks of an earlier reply, keeping Anthropic’s objects for the replay', () => {
    const result = {
      type: 'web_search_tool_result',
      tool_use_id: 'srvtoolu_1',
      content: [
        { type: 'web_search_result', url: 'https://a.example/', title: 'A', encrypted_content: 'E', page_age: '1 day' },
      ],
    };
    const citation = {
      type: 'web_search_result_location',
      url: 'https://a.example/',
      title: 'A',
      cited_text: 'a',
      encrypted_index: 'I',
    };
    const request = decodeAnthropicMessagesRequest({
      ...base,
      messages: [
        user('Toll?'),
        {
          role: 'assistant',
          content: [
            { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'toll' } },
            result,
            { type: 'text', text: 'Two coins.', citations: [citation] },
          ],
        },
        user('Thanks'),
      ],
    });
    expect(request.messages[1]!.content).toEqual([
      { type: 'server-tool-call', id: 'srvtoolu_1', name: 'web_search', input: { query: 'toll' } },
      {
        type: 'server-tool-result',
        toolCallId: 'srvtoolu_1',
        resultType: 'web_search_tool_result',
        searchResults: [{ url: 'https://a.example/', title: 'A', pageAge: '1 day' }],
        anthropicBlock: result,
      },
      {
        type: 'text',
        text: 'Two coins.',
        citations: [{ url: 'https://a.example/', title: 'A', citedText: 'a', anthropic: citation }],
      },
    ]);
  });
});
