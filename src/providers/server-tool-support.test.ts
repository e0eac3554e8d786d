import { describe, expect, it } from 'vitest';
import { GatewayError } from '../canonical/errors.js';
import type { ServerToolDefinition } from '../canonical/server-tools.js';
import { canonicalRequest, userText } from '../../test/helpers/anthropic-test-fixtures.js';
import { familiesOffering, requestForVendor } from './server-tool-support.js';

const search: ServerToolDefinition = { kind: 'web-search', label: 'web_search_20250305', param: 'tools[1]' };
const code: ServerToolDefinition = { kind: 'anthropic-only', label: 'code_execution_20250825', param: 'tools[0]' };

function refusal(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayError);
    return error as GatewayError;
  }
  throw new Error('expected a refusal');
}

describe('server tools by family', () => {
  it('knows which families run each kind', () => {
    expect(familiesOffering('web-search')).toEqual(['alpha', 'beta', 'gamma']);
    expect(familiesOffering('anthropic-only')).toEqual(['alpha']);
  });

  it('refuses a tool the family has no equivalent of, naming it, where it was declared and who offers it', () => {
    const onDelta = refusal(() => requestForVendor(canonicalRequest({ serverTools: [search] }), 'deepseek', 'delta'));
    expect(onDelta.status).toBe(400);
    expect(onDelta.param).toBe('tools[1]');
    expect(onDelta.message).toBe(
      "The tool 'web_search_20250305' in 'tools[1]' is not available on delta models; it is offered by the alpha, beta and gamma families.",
    );
    const onGamma = refusal(() => requestForVendor(canonicalRequest({ serverTools: [code] }), 'gemini', 'gamma'));
    expect(onGamma.message).toContain('offered by the alpha family.');
  });

  it('drops a tool its protocol lets go unoffered, and reports it', () => {
    const request = canonicalRequest({ serverTools: [{ ...search, droppedAs: 'tools.web_search' }] });
    const onDelta = requestForVendor(request, 'deepseek', 'delta');
    expect(onDelta.droppedParameters).toEqual(['tools.web_search']);
    expect(onDelta.request.serverTools).toBeUndefined();
    expect(requestForVendor(request, 'openai', 'beta')).toEqual({ request, droppedParameters: [] });
    expect(requestForVendor(request, 'gemini', 'gamma')).toEqual({ request, droppedParameters: [] });
  });

  it("leaves a Responses client's web search unoffered on beta beside function tools (Codex), nowhere else", () => {
    const hosted = { ...search, droppedAs: 'tools.web_search' };
    const codex = canonicalRequest({ serverTools: [hosted], tools: [{ name: 'shell' }] });
    const onBeta = requestForVendor(codex, 'openai', 'beta');
    expect(onBeta.droppedParameters).toEqual(['tools.web_search']);
    expect(onBeta.request.serverTools).toBeUndefined();
    expect(requestForVendor(codex, 'gemini', 'gamma').droppedParameters).toEqual([]);
    // Another protocol's search beside a function tool reaches the adapter, which refuses the pair naming both.
    const anthropic = canonicalRequest({ serverTools: [search], tools: [{ name: 'shell' }] });
    expect(requestForVendor(anthropic, 'openai', 'beta').request).toBe(anthropic);
  });

  it('turns earlier search blocks into text for another family, and refuses results only alpha can read', () => {
    const withSearch = canonicalRequest({
      messages: [
        userText('toll?'),
        {
          role: 'assistant',
          content: [
            { type: 'server-tool-call', id: 's1', name: 'web_search', input: {} },
            {
              type: 'server-tool-result',
              toolCallId: 's1',
              resultType: 'web_search_tool_result',
              searchResults: [{ url: 'https://a.example/', title: 'A' }],
            },
          ],
        },
        userText('and?'),
      ],
    });
    expect(requestForVendor(withSearch, 'anthropic', 'alpha').request).toBe(withSearch);
    expect(requestForVendor(withSearch, 'gemini', 'gamma').request.messages[1]!.content).toEqual([
      { type: 'text', text: 'Web search results:\n- A (https://a.example/)' },
    ]);
    const withCode = canonicalRequest({
      messages: [
        userText('run'),
        {
          role: 'assistant',
          content: [{ type: 'server-tool-result', toolCallId: 's2', resultType: 'code_execution_tool_result' }],
        },
        userText('and?'),
      ],
    });
    const refused = refusal(() => requestForVendor(withCode, 'openai', 'beta'));
    expect(refused.param).toBe('messages[1].content[0]');
    expect(refused.message).toContain('code_execution_tool_result block, which only the alpha family can take back');
  });
});
