import { describe, expect, it } from 'vitest';
import { vendorContextOverflow } from './vendor-context-overflow.js';

describe('a vendor reply recognised as a prompt over the window', () => {
  it.each([
    ['Anthropic', 'prompt is too long: 208310 tokens > 200000 maximum', undefined, 208_310, 200_000],
    [
      'Gemini',
      'The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).',
      'INVALID_ARGUMENT',
      1_200_000,
      1_048_576,
    ],
    [
      'OpenAI chat',
      "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.",
      'context_length_exceeded',
      130_512,
      128_000,
    ],
    [
      'DeepSeek',
      "This model's maximum context length is 131072 tokens. However, you requested 140000 tokens (139000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.",
      'invalid_request_error',
      139_000,
      131_072,
    ],
  ])('%s: both counts from its words', (_vendor, message, code, promptTokens, contextWindow) => {
    expect(vendorContextOverflow(400, message, code)).toEqual({ promptTokens, contextWindow });
  });

  it("OpenAI's Responses wording: recognised by its code, counts unknown", () => {
    const message = 'Your input exceeds the context window of this model. Please adjust your input and try again.';
    expect(vendorContextOverflow(400, message, 'context_length_exceeded')).toEqual({});
  });

  it('anything else, or another status, is not one', () => {
    expect(vendorContextOverflow(400, "Invalid value for 'tool_choice'.", 'invalid_request_error')).toBeUndefined();
    expect(
      vendorContextOverflow(413, 'Request exceeds the maximum allowed number of bytes.', undefined),
    ).toBeUndefined();
    expect(vendorContextOverflow(500, 'prompt is too long: 3 tokens > 2 maximum', undefined)).toBeUndefined();
  });

  it('a 413 in these words is one', () => {
    const overflow = vendorContextOverflow(413, 'prompt is too long: 3 tokens > 2 maximum', 'request_too_large');
    expect(overflow).toEqual({ promptTokens: 3, contextWindow: 2 });
  });
});
