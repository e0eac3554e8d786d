import { describe, expect, it } from 'vitest';
import type { CanonicalMessage } from '../../canonical/request.js';
import { canonicalRequest, TEST_MODEL, userText } from '../../../test/helpers/anthropic-test-fixtures.js';
import { buildAnthropicRequest } from './anthropic-build-request.js';

const MODEL = { ...TEST_MODEL, automaticCaching: false };
const anthropicSearch = { type: 'web_search_20250305', name: 'web_search', allowed_domains: ['a.example'] };
const result = {
  type: 'web_search_tool_result',
  tool_use_id: 'srvtoolu_1',
  content: [{ type: 'web_search_result', url: 'https://a.example/', title: 'A', encrypted_content: 'E' }],
};

describe('server tools toward Anthropic', () => {
  it('sends an Anthropic client’s tool as declared, with the default max_uses when it set none', () => {
    const { body, droppedParameters } = buildAnthropicRequest(
      canonicalRequest({
        serverTools: [
          { kind: 'web-search', label: anthropicSearch.type, param: 'tools[0]', anthropicTool: anthropicSearch },
        ],
        toolChoice: { type: 'auto' },
      }),
      MODEL,
    );
    expect(body.tools).toEqual([{ ...anthropicSearch, max_uses: 5 }]);
    expect(body.tool_choice).toEqual({ type: 'auto' });
    expect(droppedParameters).toEqual([]);
  });

  it('builds Anthropic’s web search from another client’s, reporting the hint it has no use for', () => {
    const { body, droppedParameters } = buildAnthropicRequest(
      canonicalRequest({
        extensionsProtocol: 'openai-chat',
        serverTools: [
          {
            kind: 'web-search',
            label: 'web_search_options',
            param: 'web_search_options',
            webSearch: { contextSize: 'low', userLocation: { country: 'PT' }, maxUses: 2 },
          },
        ],
      }),
      MODEL,
    );
    expect(body.tools).toEqual([
      {
        type: 'web_search_20250305',
        name: 'web_search',
        max_uses: 2,
        user_location: { type: 'approximate', country: 'PT' },
      },
    ]);
    expect(droppedParameters).toEqual(['web_search_options.search_context_size']);
  });

  it('replays its own search blocks intact; another family’s search goes as text, its call left out', () => {
    const messages: CanonicalMessage[] = [
      userText('toll?'),
      {
        role: 'assistant',
        content: [
          { type: 'server-tool-call', id: 'srvtoolu_1', name: 'web_search', input: { query: 'toll' } },
          {
            type: 'server-tool-result',
            toolCallId: 'srvtoolu_1',
            resultType: 'web_search_tool_result',
            anthropicBlock: result,
          },
          { type: 'server-tool-call', id: 'srvtoolu_g', name: 'web_search', input: { query: 'toll' } },
          {
            type: 'server-tool-result',
            toolCallId: 'srvtoolu_g',
            resultType: 'web_search_tool_result',
            searchResults: [{ url: 'https://g.example/', title: 'G' }],
          },
          {
            type: 'text',
            text: 'It is 2.',
            citations: [{ url: 'https://a.example/', anthropic: { type: 'x', url: 'https://a.example/' } }],
          },
        ],
      },
      userText('thanks'),
    ];
    const { body } = buildAnthropicRequest(canonicalRequest({ messages }), MODEL);
    expect(body.messages[1]!.content).toEqual([
      { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'toll' } },
      result,
      { type: 'text', text: 'Web search results:\n- G (https://g.example/)' },
      { type: 'text', text: 'It is 2.', citations: [{ type: 'x', url: 'https://a.example/' }] },
    ]);
  });
});
