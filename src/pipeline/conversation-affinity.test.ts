import { describe, expect, it } from 'vitest';
import type { CanonicalMessage, CanonicalRequest } from '../canonical/request.js';
import type { CatalogModel } from '../catalog/model-catalog.js';
import { AffinityKeyedCall, conversationAffinityKey } from './conversation-affinity.js';

const SYSTEM_PROMPT = 'You are a careful coding agent. Secret-ish instructions live here.';
const FIRST_QUESTION = 'Please refactor src/app.ts';

function conversation(turns: CanonicalMessage[], first = FIRST_QUESTION): CanonicalRequest {
  return {
    model: 'beta-5.4',
    system: [{ type: 'text', text: SYSTEM_PROMPT }],
    messages: [{ role: 'user', content: [{ type: 'text', text: first }] }, ...turns],
    tools: [{ name: 'read_file', description: 'Reads a file', parameters: { type: 'object' } }],
    sampling: {},
    stream: false,
    extensions: {},
    extensionsProtocol: 'openai-chat',
  };
}

const turn2: CanonicalMessage[] = [
  { role: 'assistant', content: [{ type: 'text', text: 'Reading it.' }] },
  { role: 'user', content: [{ type: 'text', text: 'Go on' }] },
];

describe('conversationAffinityKey', () => {
  it('is the same for every turn of one conversation', () => {
    const first = conversationAffinityKey('key_1', 'beta-5.4', conversation([]));
    expect(conversationAffinityKey('key_1', 'beta-5.4', conversation(turn2))).toBe(first);
    expect(first).toMatch(/^[0-9a-f]{32}$/);
  });

  it('differs across conversations, API keys and models', () => {
    const base = conversationAffinityKey('key_1', 'beta-5.4', conversation([]));
    expect(conversationAffinityKey('key_1', 'beta-5.4', conversation([], 'Another task'))).not.toBe(base);
    expect(conversationAffinityKey('key_2', 'beta-5.4', conversation([]))).not.toBe(base);
    expect(conversationAffinityKey('key_1', 'beta-5.5', conversation([]))).not.toBe(base);
    const otherTools = { ...conversation([]), tools: [{ name: 'write_file' }] };
    expect(conversationAffinityKey('key_1', 'beta-5.4', otherTools)).not.toBe(base);
  });

  it('ignores cache breakpoints, which clients move from turn to turn', () => {
    const marked = conversation([]);
    marked.messages[0]!.content = [{ type: 'text', text: FIRST_QUESTION, cache: { ttl: '5m' } }];
    marked.system = [{ type: 'text', text: SYSTEM_PROMPT, cache: { ttl: '1h' } }];
    expect(conversationAffinityKey('key_1', 'beta-5.4', marked)).toBe(
      conversationAffinityKey('key_1', 'beta-5.4', conversation(turn2)),
    );
  });

  it('tells apart conversations that open with different images, however large', () => {
    const withImage = (data: string): CanonicalRequest => {
      const request = conversation([]);
      request.messages[0]!.content = [{ type: 'image', source: { kind: 'base64', mediaType: 'image/png', data } }];
      return request;
    };
    const big = 'A'.repeat(2_000_000);
    expect(conversationAffinityKey('k', 'm', withImage(big))).not.toBe(
      conversationAffinityKey('k', 'm', withImage(`B${big.slice(1)}`)),
    );
    expect(conversationAffinityKey('k', 'm', withImage(big))).toBe(conversationAffinityKey('k', 'm', withImage(big)));
  });

  it('is the key earlier versions gave, lone surrogates included: pins and cache keys survive an upgrade', () => {
    const request = {
      model: 'beta-5.4',
      system: [
        { type: 'text', text: 'Sys \ud800' },
        { type: 'text', text: '\udc00 tail 😀' },
      ],
      tools: [
        { name: 'read_file', description: 'Reads a file', inputSchema: { type: 'object' }, cache: { ttl: '5m' } },
      ],
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'héllo \udfff' },
            { type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: 'iVBORw0KGgo' } },
          ],
        },
      ],
    } as unknown as CanonicalRequest;
    // Computed by the version that hashed each part with its own update call.
    expect(conversationAffinityKey('key_1', 'beta-5.4', request)).toBe('e2e7bc077bc53f43d45a2e8504246ca1');
  });

  it('gives parts too long to join the key they had joined, lone surrogates at their ends included', () => {
    const long = `\udc00${'x'.repeat(20_000)}é😀\ud800`;
    const request = {
      model: 'beta-5.4',
      system: [
        { type: 'text', text: long },
        { type: 'text', text: 'short' },
      ],
      tools: [{ name: 'read_file', description: 'd'.repeat(17_000) }],
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'q' },
            { type: 'text', text: long },
          ],
        },
      ],
    } as unknown as CanonicalRequest;
    // Computed by the version that joined every part into one string.
    expect(conversationAffinityKey('key_1', 'beta-5.4', request)).toBe('6c7362900a834ab3b06cae0e872c4293');
  });

  it('a keyed call computes the key once, on first read', () => {
    const request = conversation([]);
    const expected = conversationAffinityKey('key_1', 'beta-5.4', request);
    const model = { id: 'beta-5.4' } as CatalogModel;
    const call = new AffinityKeyedCall(request, model, new AbortController().signal, 'r', undefined, 'key_1', request);
    expect(call.affinityKey).toBe(expected);
    // Read again after the request changed: still the first answer, not a second hash.
    request.system = [{ type: 'text', text: 'changed after the first read' }];
    expect(call.affinityKey).toBe(expected);
  });
});
