import { describe, expect, it } from 'vitest';
import { ResponseAccumulator } from '../../canonical/accumulate.js';
import { GatewayError } from '../../canonical/errors.js';
import type { ServerToolDefinition } from '../../canonical/server-tools.js';
import { canonicalRequest } from '../../../test/helpers/anthropic-test-fixtures.js';
import type { GeminiGenerateContentResponse } from '../../wire/gemini-generate-wire.js';
import { buildGeminiRequest } from './gemini-build-request.js';
import { mapGeminiResponse } from './gemini-map-response.js';

const search: ServerToolDefinition = { kind: 'web-search', label: 'web_search_20250305', param: 'tools[0]' };

const grounded: GeminiGenerateContentResponse = {
  candidates: [
    {
      content: { role: 'model', parts: [{ text: 'Tolls rose. Bridges too.' }] },
      finishReason: 'STOP',
      groundingMetadata: {
        webSearchQueries: ['toll prices', 'bridge tolls'],
        groundingChunks: [
          { web: { uri: 'https://a.example/', title: 'a.example' } },
          { web: { uri: 'https://b.example/' } },
        ],
        groundingSupports: [
          { segment: { startIndex: 0, endIndex: 11, text: 'Tolls rose.' }, groundingChunkIndices: [0] },
        ],
      },
    },
  ],
  usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5 },
};

function fold(searchesBilledPerPrompt: boolean) {
  const accumulator = new ResponseAccumulator();
  const options = { vendorLabel: 'Gemini', fallbackModel: 'm', mintNonce: () => 'n', searchesBilledPerPrompt };
  for (const event of mapGeminiResponse(grounded, options)) accumulator.apply(event);
  return accumulator.response;
}

describe('web search as Google Search grounding', () => {
  it('asks for Google Search, dropping and reporting what only tunes it, refusing domain lists', () => {
    const built = buildGeminiRequest(
      canonicalRequest({ serverTools: [{ ...search, webSearch: { maxUses: 3, userLocation: { country: 'PT' } } }] }),
      'gemini-2.5-pro',
    );
    expect(built.body.tools).toEqual([{ googleSearch: {} }]);
    expect(built.droppedParameters).toEqual(expect.arrayContaining(['tools[0].max_uses', 'tools[0].user_location']));
    let refused: unknown;
    try {
      buildGeminiRequest(
        canonicalRequest({ serverTools: [{ ...search, webSearch: { blockedDomains: ['x'] } }] }),
        'gemini-2.5-pro',
      );
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(GatewayError);
    expect((refused as GatewayError).param).toBe('tools[0].blocked_domains');
  });

  it('reads the grounding into cited text, the searches and the pages found', () => {
    const reply = fold(false);
    expect(reply.content).toEqual([
      {
        type: 'text',
        text: 'Tolls rose. Bridges too.',
        citations: [
          { url: 'https://a.example/', title: 'a.example', citedText: 'Tolls rose.' },
          { url: 'https://b.example/' },
        ],
      },
      { type: 'server-tool-call', id: 'srvtoolu_n_1', name: 'web_search', input: { query: 'toll prices' } },
      { type: 'server-tool-call', id: 'srvtoolu_n_2', name: 'web_search', input: { query: 'bridge tolls' } },
      {
        type: 'server-tool-result',
        toolCallId: 'srvtoolu_n_2',
        resultType: 'web_search_tool_result',
        searchResults: [
          { url: 'https://a.example/', title: 'a.example' },
          { url: 'https://b.example/', title: 'https://b.example/' },
        ],
      },
    ]);
  });

  it('counts each query (Gemini 3) or one per grounded prompt (Gemini 2)', () => {
    expect(fold(false).usage.serverToolUse).toEqual({ webSearchRequests: 2, webFetchRequests: 0 });
    expect(fold(true).usage.serverToolUse).toEqual({ webSearchRequests: 1, webFetchRequests: 0 });
  });
});
