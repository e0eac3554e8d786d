import { describe, expect, it } from 'vitest';
import { ResponseAccumulator } from '../../canonical/accumulate.js';
import type { GatewayError } from '../../canonical/errors.js';
import type { ServerToolDefinition } from '../../canonical/server-tools.js';
import { SseDecoder } from '../../streaming/sse-decoder.js';
import { canonicalRequest } from '../../../test/helpers/anthropic-test-fixtures.js';
import { buildOpenAIRequest } from './openai-build-request.js';
import { mapOpenAIResponse } from './openai-map-response.js';
import { OpenAIStreamMapper } from './openai-map-stream.js';

const search: ServerToolDefinition = {
  kind: 'web-search',
  label: 'web_search_20250305',
  param: 'tools[0]',
  webSearch: { maxUses: 2, contextSize: 'high', userLocation: { country: 'PT', city: 'Lisbon' } },
};

function refusal(run: () => unknown): GatewayError {
  try {
    run();
  } catch (error) {
    return error as GatewayError;
  }
  throw new Error('no refusal');
}

describe('buildOpenAIRequest with a web search', () => {
  it('maps the limits the search model takes, drops the search count and the sampling it refuses', () => {
    const request = canonicalRequest({ serverTools: [search], sampling: { temperature: 0.3, topP: 0.9 } });
    const { body, droppedParameters } = buildOpenAIRequest(request, 'gpt-5-search-api');
    expect(body.web_search_options).toEqual({
      search_context_size: 'high',
      user_location: { type: 'approximate', approximate: { country: 'PT', city: 'Lisbon' } },
    });
    expect(body).not.toHaveProperty('temperature');
    expect(body).not.toHaveProperty('top_p');
    expect(droppedParameters).toEqual(['tools[0].max_uses', 'temperature', 'top_p']);
  });

  it('refuses a domain list, a client tool, several choices or log probabilities, naming the client field', () => {
    const domains = { ...search, webSearch: { allowedDomains: ['a.example'] } };
    const onDomains = refusal(() => buildOpenAIRequest(canonicalRequest({ serverTools: [domains] }), 'm'));
    expect(onDomains.param).toBe('tools[0].allowed_domains');
    const withTool = canonicalRequest({ serverTools: [search], tools: [{ name: 'lookup' }] });
    expect(refusal(() => buildOpenAIRequest(withTool, 'm')).param).toBe('tools');
    const choices = canonicalRequest({
      serverTools: [search],
      choices: { count: 2, param: 'generationConfig.candidateCount' },
    });
    expect(refusal(() => buildOpenAIRequest(choices, 'm')).message).toContain(
      "'tools[0]' cannot be combined with 'generationConfig.candidateCount'",
    );
  });
});

const ANNOTATION = {
  type: 'url_citation',
  url_citation: { url: 'https://a.example/', title: 'A', start_index: 0, end_index: 9 },
};

describe('a searched reply', () => {
  it('whole: annotations become citations of the passage, then the search blocks; one search is billed', () => {
    const events = mapOpenAIResponse(
      {
        id: 'c1',
        object: 'chat.completion',
        created: 1,
        model: 'gpt-5-search-api',
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: 'Tolls rise. Elsewhere too.', annotations: [ANNOTATION] },
            finish_reason: 'stop',
          },
        ],
        usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
      },
      'toll news',
    );
    const accumulator = new ResponseAccumulator();
    for (const event of events) accumulator.apply(event);
    expect(accumulator.response.content).toEqual([
      {
        type: 'text',
        text: 'Tolls rise. Elsewhere too.',
        citations: [{ url: 'https://a.example/', title: 'A', citedText: 'Tolls ris' }],
      },
      { type: 'server-tool-call', id: 'srvtoolu_c1', name: 'web_search', input: { query: 'toll news' } },
      {
        type: 'server-tool-result',
        toolCallId: 'srvtoolu_c1',
        resultType: 'web_search_tool_result',
        searchResults: [{ url: 'https://a.example/', title: 'A' }],
      },
    ]);
    expect(accumulator.response.usage?.serverToolUse).toEqual({ webSearchRequests: 1, webFetchRequests: 0 });
    const plain = mapOpenAIResponse({ id: 'c2', object: 'chat.completion', created: 1, model: 'm', choices: [] });
    expect(plain.some((event) => event.type === 'server-tool-call')).toBe(false);
  });

  it('streamed: annotations after the text index into all of it, as whole', () => {
    const chunk = (delta: object, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    const sse = [
      chunk({ role: 'assistant', content: '' }),
      chunk({ content: 'Tolls ' }),
      chunk({ content: 'rise. Elsewhere too.' }),
      chunk({ annotations: [ANNOTATION] }),
      chunk({}, 'stop'),
      `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } })}\n\n`,
      'data: [DONE]\n\n',
    ].join('');
    const mapper = new OpenAIStreamMapper('OpenAI', 'toll news');
    const events = new SseDecoder().push(new TextEncoder().encode(sse)).flatMap((event) => mapper.map(event));
    const accumulator = new ResponseAccumulator();
    for (const event of [...events, ...mapper.end()]) accumulator.apply(event);
    expect(accumulator.response.content[0]).toMatchObject({
      text: 'Tolls rise. Elsewhere too.',
      citations: [{ url: 'https://a.example/', citedText: 'Tolls ris' }],
    });
    expect(accumulator.response.content.map((block) => block.type)).toEqual([
      'text',
      'server-tool-call',
      'server-tool-result',
    ]);
    expect(accumulator.response.usage?.serverToolUse).toEqual({ webSearchRequests: 1, webFetchRequests: 0 });
  });
});
