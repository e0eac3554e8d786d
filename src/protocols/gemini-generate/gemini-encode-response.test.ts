import { describe, expect, it } from 'vitest';
import { encodeGeminiFinishReason } from './gemini-encode-response.js';

describe('encodeGeminiFinishReason', () => {
  it("keeps a blocked reply's reason when it is already one of Google's", () => {
    expect(encodeGeminiFinishReason('content-filter', 'RECITATION')).toBe('RECITATION');
    expect(encodeGeminiFinishReason('content-filter', 'PROHIBITED_CONTENT')).toBe('PROHIBITED_CONTENT');
  });

  it("answers SAFETY for another upstream's filter, and never passes on malformed-call reasons", () => {
    expect(encodeGeminiFinishReason('content-filter', 'refusal')).toBe('SAFETY');
    expect(encodeGeminiFinishReason('content-filter', 'content_filter')).toBe('SAFETY');
    expect(encodeGeminiFinishReason('other', 'MALFORMED_FUNCTION_CALL')).toBe('OTHER');
    expect(encodeGeminiFinishReason('tool-calls', 'STOP')).toBe('STOP');
  });
});
