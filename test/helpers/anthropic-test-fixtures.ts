import type { CanonicalMessage, CanonicalRequest } from '../../src/canonical/request.js';
import type { CatalogModel } from '../../src/catalog/model-catalog.js';

/** Shared by the adapter's tests: a catalog entry and a canonical request with test-chosen overrides. */
export const TEST_MODEL: CatalogModel = {
  id: 'alpha-sonnet-5',
  family: 'alpha',
  vendor: 'anthropic',
  upstreamModel: 'claude-sonnet-5',
  description: 'test',
  maxOutputTokens: 64_000,
  contextWindow: 200_000,
};

export function userText(text: string): CanonicalMessage {
  return { role: 'user', content: [{ type: 'text', text }] };
}

export function canonicalRequest(overrides: Partial<CanonicalRequest> = {}): CanonicalRequest {
  return {
    model: 'alpha-sonnet-5',
    system: [],
    messages: [userText('Hello')],
    sampling: {},
    stream: false,
    extensions: {},
    extensionsProtocol: 'openai-chat',
    ...overrides,
  };
}
