import { describe, expect, it } from 'vitest';
import type { CanonicalRequest } from '../canonical/request.js';
import { ModelCatalog } from '../catalog/model-catalog.js';
import { buildAnthropicRequest } from './anthropic/anthropic-build-request.js';
import { buildDeepSeekRequest } from './deepseek/deepseek-build-request.js';
import { buildGeminiRequest } from './gemini/gemini-build-request.js';
import { buildOpenAIRequest } from './openai/openai-build-request.js';

function canonical(overrides: Partial<CanonicalRequest> = {}): CanonicalRequest {
  return {
    model: 'beta-5.4',
    system: [],
    messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }],
    sampling: {},
    stream: false,
    extensions: {},
    extensionsProtocol: 'openai-chat',
    ...overrides,
  };
}

const AFFINITY = '0123456789abcdef0123456789abcdef';
const clientSent = { promptCacheKey: 'my-session-1', promptCacheRetention: '24h' } as const;

describe('prompt-cache key and retention, OpenAI (beta)', () => {
  it("sends the client's key and retention, from either OpenAI client protocol", () => {
    for (const extensionsProtocol of ['openai-chat', 'openai-responses'] as const) {
      const { body, droppedParameters } = buildOpenAIRequest(
        canonical({ ...clientSent, extensionsProtocol }),
        'gpt-5.4',
        {
          affinityKey: AFFINITY,
        },
      );
      expect(body).toMatchObject({ prompt_cache_key: 'my-session-1', prompt_cache_retention: '24h' });
      expect(droppedParameters).toEqual([]);
    }
  });

  it('derives a key from the affinity key when the client sent none, from any client protocol', () => {
    for (const extensionsProtocol of ['openai-chat', 'anthropic-messages', 'gemini-generate'] as const) {
      const { body, droppedParameters } = buildOpenAIRequest(canonical({ extensionsProtocol }), 'gpt-5.4', {
        affinityKey: AFFINITY,
      });
      expect(body.prompt_cache_key).toBe(`tg-${AFFINITY}`);
      expect(body).not.toHaveProperty('prompt_cache_retention');
      expect(droppedParameters).not.toContain('prompt_cache_key');
    }
  });

  it('sends no key when there is neither a client key nor an affinity key', () => {
    expect(buildOpenAIRequest(canonical(), 'gpt-5.4').body).not.toHaveProperty('prompt_cache_key');
  });
});

describe('prompt-cache fields on vendors without them: dropped, reported only when the client sent them', () => {
  const catalog = new ModelCatalog();
  const builders: Record<string, (request: CanonicalRequest) => { body: object; droppedParameters: string[] }> = {
    'delta (DeepSeek)': (request) => buildDeepSeekRequest(request, 'deepseek-v4-flash'),
    'alpha (Anthropic)': (request) => buildAnthropicRequest(request, catalog.resolve('alpha-sonnet-5')),
    'gamma (Gemini)': (request) => buildGeminiRequest(request, 'gemini-2.5-pro'),
  };

  it.each(Object.keys(builders))('%s', (name) => {
    const build = builders[name]!;
    const sent = build(canonical(clientSent));
    expect(sent.body).not.toHaveProperty('prompt_cache_key');
    expect(sent.body).not.toHaveProperty('prompt_cache_retention');
    expect(sent.droppedParameters).toEqual(expect.arrayContaining(['prompt_cache_key', 'prompt_cache_retention']));
    const none = build(canonical());
    expect(none.droppedParameters).not.toContain('prompt_cache_key');
    expect(none.droppedParameters).not.toContain('prompt_cache_retention');
  });
});
