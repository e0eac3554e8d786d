import { describe, expect, it } from 'vitest';
import { ResponseAccumulator } from '../../canonical/accumulate.js';
import type { CanonicalEvent } from '../../canonical/events.js';
import { decodeOpenAIChatRequest } from '../../protocols/openai-chat/openai-decode-request.js';
import { encodeOpenAIResponse } from '../../protocols/openai-chat/openai-encode-response.js';
import { buildGeminiRequest } from './gemini-build-request.js';
import { mapGeminiResponse } from './gemini-map-response.js';
import { decodeGeminiToolCallId, encodeGeminiToolCallId } from './gemini-tool-call-id.js';

const ANTHROPIC_ID = /^[a-zA-Z0-9_-]+$/;

describe('Gemini tool-call id codec', () => {
  it.each([
    [{}],
    [{ geminiId: 'fc-1' }],
    [{ thoughtSignature: 'CpYBAb4+9vt/x8Z==' }],
    [{ geminiId: 'a.b:c/ü', thoughtSignature: 'not base64 at all: ü ✓ __tgsig__ ' }],
    [{ geminiId: 'x__tgsig__y', thoughtSignature: '_'.repeat(300) }],
  ])('round-trips %j and keeps to the charset Anthropic clients accept', (reference) => {
    const id = encodeGeminiToolCallId(reference);
    expect(id).toMatch(ANTHROPIC_ID);
    expect(id.startsWith('call_')).toBe(true);
    expect(decodeGeminiToolCallId(id)).toEqual(reference);
  });

  it('mints a fresh id per call, so calls without a Gemini id stay distinct', () => {
    const ids = new Set(Array.from({ length: 100 }, () => encodeGeminiToolCallId({ thoughtSignature: 'same' })));
    expect(ids.size).toBe(100);
  });

  it('knows nothing of ids it did not make', () => {
    for (const foreign of [
      'call_abc123',
      'toolu_01A09q90qw90lq917835lq9',
      'call-1',
      'call_x__tgsig__!!',
      'fc_1__tgsig__c2ln',
      '',
    ]) {
      expect(decodeGeminiToolCallId(foreign)).toEqual({});
    }
  });

  it('drops a signature whose payload has a length no encoder produces (a truncated id) rather than send a wrong one', () => {
    const id = encodeGeminiToolCallId({ thoughtSignature: 'abcd' }, 'n1');
    expect(id).toBe('call_n1__tgsig__YWJjZA');
    expect(decodeGeminiToolCallId(id.slice(0, -1))).toEqual({});
  });

  it('rejects a nonce that would make the id ambiguous', () => {
    expect(() => encodeGeminiToolCallId({}, 'a_b')).toThrow();
  });
});

describe('Gemini tool-call id through an OpenAI client turn (Gemini thought signatures on calls, one Gemini function response per call, Gemini function response names)', () => {
  it('restores signatures, Gemini ids and function names when the client sends the calls and results back', () => {
    // 1. Gemini answers with two parallel calls; only the first is signed, only the second has an id.
    const events: CanonicalEvent[] = mapGeminiResponse(
      {
        candidates: [
          {
            content: {
              role: 'model',
              parts: [
                { text: 'Checking both.' },
                {
                  functionCall: { name: 'lookup_weather', args: { city: 'Lisbon' } },
                  thoughtSignature: 'CpYBAb4+9vt/x8Z==',
                },
                { functionCall: { id: 'fc-2', name: 'local_time', args: { city: 'Porto' } } },
              ],
            },
            finishReason: 'STOP',
          },
        ],
        usageMetadata: { promptTokenCount: 40, candidatesTokenCount: 20, totalTokenCount: 60 },
        modelVersion: 'gemini-3.5-flash',
        responseId: 'r1',
      },
      { vendorLabel: 'Gemini', fallbackModel: 'gemini-3.5-flash' },
    );
    // 2. The gateway answers the OpenAI client; the client only keeps what the SDK types have.
    const reply = new ResponseAccumulator();
    for (const event of events) reply.apply(event);
    const completion = JSON.parse(
      JSON.stringify(encodeOpenAIResponse(reply.response, { id: 'chatcmpl-1', model: 'gamma-3.5-flash' })),
    );
    const message = completion.choices[0].message;
    expect(completion.choices[0].finish_reason).toBe('tool_calls');
    const [first, second] = message.tool_calls as Array<{ id: string; function: { name: string } }>;
    expect(first!.id).toMatch(ANTHROPIC_ID);

    // 3. The client runs the tools and sends the history back with one tool message per call (out of order).
    const next = decodeOpenAIChatRequest({
      model: 'gamma-3.5-flash',
      messages: [
        { role: 'user', content: 'Weather in Lisbon and time in Porto?' },
        { role: 'assistant', content: message.content, tool_calls: message.tool_calls },
        { role: 'tool', tool_call_id: second!.id, content: '14:05' },
        { role: 'tool', tool_call_id: first!.id, content: 'light rain' },
      ],
    }).request;

    // 4. The Gemini request of the next turn.
    const { body } = buildGeminiRequest(next, 'gemini-3.5-flash');
    expect(body.contents).toEqual([
      { role: 'user', parts: [{ text: 'Weather in Lisbon and time in Porto?' }] },
      {
        role: 'model',
        parts: [
          { text: 'Checking both.' },
          { functionCall: { name: 'lookup_weather', args: { city: 'Lisbon' } }, thoughtSignature: 'CpYBAb4+9vt/x8Z==' },
          { functionCall: { name: 'local_time', args: { city: 'Porto' }, id: 'fc-2' } },
        ],
      },
      {
        role: 'user',
        parts: [
          { functionResponse: { name: 'lookup_weather', response: { output: 'light rain' } } },
          { functionResponse: { name: 'local_time', response: { output: '14:05' }, id: 'fc-2' } },
        ],
      },
    ]);
  });
});
