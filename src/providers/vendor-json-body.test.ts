import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { clientJsonBodyOf, MIN_REUSED_BODY_BYTES, rememberBodyBytes } from '../canonical/client-json-body.js';
import { decodeAnthropicMessagesRequest } from '../protocols/anthropic-messages/anthropic-decode-request.js';
import { decodeOpenAIChatRequest } from '../protocols/openai-chat/openai-decode-request.js';
import { buildAnthropicRequest } from './anthropic/anthropic-build-request.js';
import { buildOpenAIRequest } from './openai/openai-build-request.js';
import { sameFormatClientBody, vendorJsonBody } from './vendor-json-body.js';
import { TEST_MODEL } from '../../test/helpers/anthropic-test-fixtures.js';

/** Parses `text` as the JSON body parser does and keeps its bytes, as a large client body is kept. */
function received(text: string): { value: unknown; bytes: Buffer } {
  const bytes = Buffer.from(text);
  // The body parser drops a byte-order mark before parsing; the bytes keep it.
  const value: unknown = JSON.parse(text.replace(/^\uFEFF/, ''));
  rememberBodyBytes(value, bytes);
  return { value, bytes };
}

const FILLER = 'the river runs slowly past the old mill and the reeds lean over the water. ';
const longPrompt = (prefix: string) => `${prefix} ${FILLER.repeat(Math.ceil(MIN_REUSED_BODY_BYTES / FILLER.length))}`;

/** What the vendor parses, and whether the client's bytes were reused for it. */
function sent(body: Record<string, unknown>, clientText: string) {
  const { value } = received(clientText);
  const encoded = vendorJsonBody(body, clientJsonBodyOf(value));
  return { parsed: JSON.parse(encoded.toString()) as unknown, reused: typeof encoded !== 'string' };
}

describe('a vendor body reusing the client body', () => {
  it('sends the same value as JSON.stringify, reusing the prompt of a same-format OpenAI body', () => {
    const text = JSON.stringify({ model: 'gpt-bench', messages: [{ role: 'user', content: longPrompt('hi') }] });
    const { value } = received(text);
    const { request } = decodeOpenAIChatRequest(value);
    const { body } = buildOpenAIRequest(request, 'gpt-5.4');
    const encoded = vendorJsonBody(body, request.clientBody);
    expect(Buffer.isBuffer(encoded)).toBe(true);
    expect(JSON.parse(encoded.toString())).toEqual(JSON.parse(JSON.stringify(body)));
    expect(JSON.parse(encoded.toString()).model).toBe('gpt-5.4');
  });

  it('matches JSON.stringify on varied OpenAI chat bodies (property)', () => {
    // Text of any code point (quotes, backslashes, controls, non-ASCII); fields with numbers and extensions;
    // whitespace the client chose.
    const text = fc.string({ unit: 'binary', maxLength: 40 });
    const message = fc.record({
      role: fc.constantFrom('system', 'user', 'assistant', 'developer'),
      content: fc.oneof(text, fc.array(fc.record({ type: fc.constant('text'), text }), { minLength: 1, maxLength: 3 })),
    });
    const number = fc.oneof(fc.integer({ min: 1, max: 4000 }), fc.double({ min: 0, max: 1, noNaN: true }));
    const bodyArbitrary = fc.record(
      {
        messages: fc.array(message, { minLength: 1, maxLength: 4 }),
        temperature: number,
        top_p: fc.double({ min: 0, max: 1, noNaN: true }),
        max_tokens: fc.integer({ min: 1, max: 4000 }),
        stream: fc.boolean(),
        stream_options: fc.record({ include_usage: fc.boolean() }),
        user: text,
        seed: fc.integer(),
        stop: fc.array(text, { maxLength: 3 }),
        logit_bias: fc.dictionary(fc.integer({ min: 0, max: 99 }).map(String), fc.integer({ min: -100, max: 100 })),
        metadata: fc.dictionary(fc.string({ maxLength: 5 }), text, { maxKeys: 3 }),
      },
      { requiredKeys: ['messages'] },
    );
    let reusedBodies = 0;
    fc.assert(
      fc.property(bodyArbitrary, fc.constantFrom(0, 2), fc.boolean(), (fields, indent, long) => {
        const clientBody = { model: 'gpt-bench', ...fields };
        if (long) clientBody.messages = [...clientBody.messages, { role: 'user', content: longPrompt('pad') }];
        const clientText = JSON.stringify(clientBody, null, indent);
        let decoded: ReturnType<typeof decodeOpenAIChatRequest>;
        try {
          decoded = decodeOpenAIChatRequest(received(clientText).value);
        } catch {
          return; // a body the gateway refuses sends nothing
        }
        const { body } = buildOpenAIRequest(decoded.request, 'gpt-5.4');
        const encoded = vendorJsonBody(body, decoded.request.clientBody);
        if (typeof encoded !== 'string') reusedBodies++;
        expect(JSON.parse(encoded.toString())).toEqual(JSON.parse(JSON.stringify(body)));
      }),
      { numRuns: 120 },
    );
    expect(reusedBodies).toBeGreaterThan(10);
  });

  it('matches JSON.stringify on an Anthropic body reaching an Anthropic vendor', () => {
    const clientText = JSON.stringify({
      model: 'claude-bench',
      max_tokens: 256,
      system: 'Be brief.',
      messages: [{ role: 'user', content: [{ type: 'text', text: longPrompt('hello') }] }],
      temperature: 0.5,
    });
    const request = decodeAnthropicMessagesRequest(received(clientText).value);
    const { body } = buildAnthropicRequest(request, { ...TEST_MODEL, automaticCaching: false });
    const encoded = vendorJsonBody(body, request.clientBody);
    expect(Buffer.isBuffer(encoded)).toBe(true);
    expect(JSON.parse(encoded.toString())).toEqual(JSON.parse(JSON.stringify(body)));
  });

  it('serialises a member again when its number is not written as JSON.stringify writes it', () => {
    const prompt = longPrompt('n');
    for (const written of ['1.0', '1e0', '-0', '1E2', '100.50']) {
      const clientText = `{"model":"m","messages":[{"role":"user","content":${JSON.stringify(prompt)}}],"extra":[${written}]}`;
      const clientValue = JSON.parse(clientText) as Record<string, unknown>;
      const body = { model: 'up', extra: clientValue.extra };
      const { parsed, reused } = sent(body, clientText);
      expect(reused).toBe(false);
      expect(parsed).toEqual(JSON.parse(JSON.stringify(body)));
    }
  });

  it('serialises again a body that is not valid UTF-8, repeats a key or starts with a byte-order mark', () => {
    const prompt = longPrompt('u');
    const body = { messages: [{ role: 'user', content: prompt }] };
    const invalid = Buffer.concat([
      Buffer.from(`{"messages":[{"role":"user","content":"${prompt}`),
      Buffer.from([0xf0, 0x9f, 0x98]),
      Buffer.from('"}]}'),
    ]);
    const decodedInvalid: unknown = JSON.parse(invalid.toString('utf8'));
    rememberBodyBytes(decodedInvalid, invalid);
    const fromInvalid = vendorJsonBody(decodedInvalid as Record<string, unknown>, clientJsonBodyOf(decodedInvalid));
    expect(typeof fromInvalid).toBe('string');
    expect(sent(body, `{"messages":[],"messages":${JSON.stringify(body.messages)}}`).reused).toBe(false);
    expect(sent(body, `\uFEFF${JSON.stringify(body)}`).reused).toBe(false);
    expect(sent(body, JSON.stringify(body)).reused).toBe(true);
  });

  it('drops, replaces and adds members around the reused ones', () => {
    const prompt = longPrompt('edit');
    const clientText = ` { "model" : "client-model", "messages" : [ {"role":"user","content":${JSON.stringify(prompt)}} ], "store": true, "n": 1 } `;
    const client = JSON.parse(clientText) as { messages: unknown };
    const body = { model: 'vendor-model', messages: client.messages, stream: false, n: 1, gone: undefined };
    const { parsed, reused } = sent(body, clientText);
    expect(reused).toBe(true);
    expect(parsed).toEqual({ model: 'vendor-model', messages: client.messages, stream: false, n: 1 });
  });

  it('reads a prompt with escaped quotes and backslashes to its end', () => {
    const prompt = `${longPrompt('q')} she said \\"no\\" \\\\" and "left" \\`;
    const clientText = JSON.stringify({ messages: [{ role: 'user', content: prompt }], model: 'a' });
    const client = JSON.parse(clientText) as { messages: unknown };
    const { parsed, reused } = sent({ model: 'b', messages: client.messages }, clientText);
    expect(reused).toBe(true);
    expect(parsed).toEqual({ model: 'b', messages: client.messages });
  });

  it('offers the client body only to an adapter of its own format', () => {
    const { value } = received(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: longPrompt('f') }] }));
    const { request } = decodeOpenAIChatRequest(value);
    expect(sameFormatClientBody(request, 'openai-chat')).toBe(request.clientBody);
    expect(request.clientBody).toBeDefined();
    expect(sameFormatClientBody(request, 'anthropic-messages')).toBeUndefined();
  });

  it('keeps no bytes of a small body', () => {
    const value: unknown = JSON.parse('{"model":"m","messages":[]}');
    rememberBodyBytes(value, Buffer.from('{"model":"m","messages":[]}'));
    expect(clientJsonBodyOf(value)).toBeUndefined();
  });
});
