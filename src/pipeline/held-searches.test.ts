import { describe, expect, it } from 'vitest';
import type { CanonicalRequest } from '../canonical/request.js';
import type { ServerToolDefinition } from '../canonical/server-tools.js';
import { withHeldSearches } from './held-searches.js';

const anthropicSearch: ServerToolDefinition = {
  kind: 'web-search',
  label: 'web_search_20250305',
  param: 'tools[0]',
  webSearch: { maxUses: 3 },
  anthropicTool: { type: 'web_search_20250305', name: 'web_search', max_uses: 3 },
};
const codexSearch: ServerToolDefinition = {
  kind: 'web-search',
  label: 'web_search',
  param: 'tools[1]',
  webSearch: {},
  droppedAs: 'tools.web_search',
};
const request = (serverTools: ServerToolDefinition[]): CanonicalRequest =>
  ({ model: 'alpha-sonnet-5', messages: [], stream: false, serverTools }) as unknown as CanonicalRequest;

describe('withHeldSearches', () => {
  it('keeps a request whose every search is held as it is', () => {
    const whole = request([anthropicSearch]);
    expect(withHeldSearches(whole, 3, true)).toEqual({ request: whole, dropped: [] });
    expect(withHeldSearches(whole, undefined, true).request).toBe(whole);
  });

  it('lowers the limits in turn where the vendor honours one, both in the canonical and the Anthropic form', () => {
    const { request: lowered, dropped } = withHeldSearches(request([anthropicSearch, codexSearch]), 4, true);
    expect(dropped).toEqual([]);
    expect(lowered.serverTools?.[0]).toBe(anthropicSearch);
    expect(lowered.serverTools?.[1]).toMatchObject({ webSearch: { maxUses: 1 } });
    const { request: one } = withHeldSearches(request([anthropicSearch]), 1, true);
    expect(one.serverTools?.[0]).toMatchObject({ webSearch: { maxUses: 1 }, anthropicTool: { max_uses: 1 } });
  });

  it('leaves a search tool out, named as the client sent it, when no search is held', () => {
    const { request: without, dropped } = withHeldSearches(request([anthropicSearch, codexSearch]), 0, false);
    expect(without.serverTools).toBeUndefined();
    expect(dropped).toEqual(['tools[0]', 'tools.web_search']);
    // A vendor without a limit keeps the tool while any search is held.
    expect(withHeldSearches(request([codexSearch]), 1, false).dropped).toEqual([]);
  });
});
