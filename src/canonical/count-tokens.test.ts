import { countTokens } from 'gpt-tokenizer';
import { describe, expect, it, vi } from 'vitest';
import { countTextTokens, EXACT_CHARS_PER_REQUEST, estimateRequestInputTokens } from './count-tokens.js';
import type { CanonicalRequest } from './request.js';

function requestWith(texts: string[]): CanonicalRequest {
  return {
    model: 'beta-5.4',
    system: [],
    messages: texts.map((text) => ({ role: 'user' as const, content: [{ type: 'text' as const, text }] })),
    sampling: {},
    stream: false,
    extensions: {},
    extensionsProtocol: 'openai-chat',
  };
}

describe('countTextTokens', () => {
  it('counts ordinary text exactly as the tokenizer does', () => {
    const prose = 'The quick brown fox jumps over the lazy dog. '.repeat(200);
    expect(countTextTokens(prose)).toBe(countTokens(prose));
    expect(countTextTokens('hi')).toBe(countTokens('hi'));
    expect(countTextTokens('')).toBe(0);
  });

  it('counts special-token spellings in client text as plain text instead of throwing', () => {
    expect(countTextTokens('hi <|endoftext|> there <|im_start|>')).toBeGreaterThan(4);
  });

  it('counts a long run without spaces in slices, close to the whole count', () => {
    const run = 'abcdefghij'.repeat(300);
    const text = `before ${run} after`;
    const whole = countTokens(text);
    expect(Math.abs(countTextTokens(text) - whole)).toBeLessThanOrEqual(Math.ceil(run.length / 256) + 1);
  });

  it('handles a body-sized run of one character (quadratic in the tokenizer when counted whole)', () => {
    // Counted whole this took minutes; in slices it completes well within the test timeout.
    expect(countTextTokens('x'.repeat(2_000_000))).toBeGreaterThan(2_000_000 / 256);
  });
});

describe('estimateRequestInputTokens', () => {
  it('counts a request within the budget exactly (framing included)', () => {
    const texts = ['Hello there, how are you?', 'Tell me about the weather in Paris.'];
    const exact = 3 + texts.reduce((sum, text) => sum + 3 + countTokens(text), 0);
    expect(estimateRequestInputTokens(requestWith(texts))).toBe(exact);
  });

  it('beyond the budget, extrapolates from what it counted: close to the exact count', () => {
    const prose = 'The quick brown fox jumps over the lazy dog while the cat watches. ';
    const texts = Array.from({ length: 40 }, (_, index) => `${index} ${prose.repeat(150)}`);
    expect(texts.join('').length).toBeGreaterThan(EXACT_CHARS_PER_REQUEST * 1.5);
    const exact = 3 + texts.reduce((sum, text) => sum + 3 + countTokens(text), 0);
    const estimate = estimateRequestInputTokens(requestWith(texts));
    expect(Math.abs(estimate - exact) / exact).toBeLessThan(0.02);
  });
});

describe('tokenizer loading', () => {
  const text = 'Billing counts must not depend on how the tokenizer was loaded: <|endoftext|> ünïcödé 🚀 ' + 'x'.repeat(300);

  it('loads nothing until a count is needed, then loads it synchronously (CommonJS build) with the same counts', async () => {
    vi.resetModules();
    const fresh = await import('./count-tokens.js');
    expect(fresh.tokenizerLoaded()).toBe(false);
    expect(fresh.countTextTokens(text)).toBe(countTextTokens(text));
    expect(fresh.tokenizerLoaded()).toBe(true);
  });

  it('loadTokenizer loads the ESM build once; counts after it are the same', async () => {
    vi.resetModules();
    const fresh = await import('./count-tokens.js');
    const first = fresh.loadTokenizer();
    expect(fresh.loadTokenizer()).toBe(first);
    await first;
    expect(fresh.tokenizerLoaded()).toBe(true);
    expect(fresh.countTextTokens(text)).toBe(countTextTokens(text));
    expect(fresh.countTextTokens('hi')).toBe(countTokens('hi'));
  });
});
