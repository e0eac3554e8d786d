import { describe, expect, it } from 'vitest';
import { decodeAnthropicMessagesRequest } from '../anthropic-messages/anthropic-decode-request.js';
import { decodeGeminiGenerateRequest } from '../gemini-generate/gemini-decode-request.js';
import { decodeResponsesRequest, parseResponsesRequest } from '../openai-responses/responses-decode-request.js';
import { decodeOpenAIChatRequest } from '../openai-chat/openai-decode-request.js';
import { GatewayError } from '../../canonical/errors.js';
import type { MediaInput } from '../../canonical/request.js';

const MEDIA: MediaInput = { imageUrls: true, inlinePdfs: true, pdfUrls: true, otherTypes: true };

describe('the `models` fallback field on every client protocol', () => {
  it('is decoded into fallbackModels, leaving out the request’s own model, and never sent on as an extension', () => {
    const chat = decodeOpenAIChatRequest({
      model: 'alpha-sonnet-5',
      models: ['alpha-sonnet-5', 'delta-v4-flash'],
      messages: [{ role: 'user', content: 'hi' }],
    });
    const messages = decodeAnthropicMessagesRequest({
      model: 'alpha-sonnet-5',
      max_tokens: 10,
      models: ['delta-v4-flash'],
      messages: [{ role: 'user', content: 'hi' }],
    });
    const responses = decodeResponsesRequest(
      parseResponsesRequest({ model: 'alpha-sonnet-5', models: ['delta-v4-flash'], input: 'hi' }),
    );
    const gemini = decodeGeminiGenerateRequest(
      {
        models: ['models/delta-v4-flash', 'models/alpha-sonnet-5'],
        contents: [{ role: 'user', parts: [{ text: 'hi' }] }],
      },
      { model: 'alpha-sonnet-5', media: MEDIA },
      false,
    );
    for (const request of [chat.request, messages, responses.request, gemini.request]) {
      expect(request.fallbackModels).toEqual(['delta-v4-flash']);
      expect(request.extensions).not.toHaveProperty('models');
    }
    expect(responses.droppedParameters).not.toContain('models');
  });

  it('leaves fallbackModels unset when the list names only the request’s own model', () => {
    const request = decodeAnthropicMessagesRequest({
      model: 'alpha-sonnet-5',
      max_tokens: 10,
      models: ['alpha-sonnet-5'],
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(request.fallbackModels).toBeUndefined();
  });

  it.each<[unknown, string]>([
    [[], 'an empty list'],
    [Array.from({ length: 9 }, (_, index) => `model-${index}`), 'more than eight'],
    [[''], 'an empty name'],
    ['delta-v4-flash', 'a string'],
  ])('refuses %j (%s) naming the field', (models) => {
    const decode = () =>
      decodeAnthropicMessagesRequest({
        model: 'alpha-sonnet-5',
        max_tokens: 10,
        models,
        messages: [{ role: 'user', content: 'hi' }],
      });
    expect(decode).toThrow(GatewayError);
    expect(decode).toThrow(/models/);
  });
});
