import { describe, expect, it } from 'vitest';
import type { CanonicalRequest } from '../canonical/request.js';
import { ModelCatalog } from '../catalog/model-catalog.js';
import { assertModelCapabilities, modelAccepts } from './model-capabilities.js';

const catalog = new ModelCatalog({
  'delta-text': {
    family: 'delta',
    contextWindow: 64_000,
    maxOutputTokens: 4_096,
    prices: { input: '0.1', output: '0.2' },
    capabilities: ['tools'],
  },
});

function request(extra: Partial<CanonicalRequest> = {}): CanonicalRequest {
  return {
    model: 'delta-text',
    system: [],
    messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
    sampling: {},
    stream: false,
    ...extra,
  } as CanonicalRequest;
}

describe('model capabilities', () => {
  const text = catalog.resolve('delta-text');

  it('serves what the listed capabilities cover, and every request on a model without a list', () => {
    const withTool = request({ tools: [{ name: 'f', description: '', inputSchema: { type: 'object' } }] as never });
    expect(() => assertModelCapabilities(withTool, text)).not.toThrow();
    expect(modelAccepts(withTool, catalog.resolve('delta-v4-flash'))).toBe(true);
  });

  it('refuses image input on a model without vision, naming the model, with a 400', () => {
    const image = request({
      messages: [
        { role: 'user', content: [{ type: 'image', source: { kind: 'url', url: 'https://example.com/a.png' } }] },
      ] as never,
    });
    expect(() => assertModelCapabilities(image, text)).toThrow(
      expect.objectContaining({
        status: 400,
        message: "The model 'delta-text' does not accept image or document input.",
      }),
    );
    expect(modelAccepts(image, text)).toBe(false);
  });
});
