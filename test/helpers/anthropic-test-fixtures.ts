import type { CanonicalMessage, CanonicalRequest } from '../../src/canonical/request.js';
import { ModelCatalog, type CatalogModel } from '../../src/catalog/model-catalog.js';

/** Shared by the adapter's tests: a catalog entry and a canonical request with test-chosen overrides. */
export const TEST_MODEL: CatalogModel = new ModelCatalog().resolve('alpha-sonnet-5');

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
