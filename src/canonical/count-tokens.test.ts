import fc from 'fast-check';
import { countTokens } from 'gpt-tokenizer';
import { describe, expect, it, vi } from 'vitest';
import { forEachBoundedPiece, LONG_RUN } from './bounded-pretokens.js';
import {
  countTextTokens,
  EXACT_CHARS_PER_REQUEST,
  estimateRequestInputTokens,
  upperBoundRequestInputTokens,
  utf8UpperBound,
} from './count-tokens.js';
import type { CanonicalRequest, ContentBlock } from './request.js';

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

describe('countTextTokens on long runs of whitespace and of one character', () => {
  it('counts a long run of spaces or newlines in slices too (one pre-token, quadratic when counted whole)', () => {
    // 200,000 spaces counted whole: about 40 s of BPE on the event loop; in slices, a few hundred small counts.
    for (const run of [' '.repeat(200_000), '\n'.repeat(200_000), '\u3000'.repeat(200_000)]) {
      const tokens = countTextTokens(run);
      expect(tokens).toBeGreaterThanOrEqual(Math.floor(run.length / 256));
      expect(tokens).toBeLessThanOrEqual(run.length);
    }
    const text = `Hello ${' '.repeat(1_000)} world`;
    expect(Math.abs(countTextTokens(text) - countTokens(text))).toBeLessThanOrEqual(Math.ceil(1_000 / 256) + 1);
  });

  it('cuts only inside runs longer than the limit, at most once per limit, without a regular expression (a 7.5 MB run overflowed its stack)', () => {
    const pieces: string[] = [];
    const text = `${'a'.repeat(8_000_000)} tail`;
    forEachBoundedPiece(text, (piece) => pieces.push(piece));
    expect(pieces.join('')).toBe(text);
    expect(pieces.every((piece) => piece.length <= LONG_RUN + 5)).toBe(true);
    expect(pieces.length).toBe(Math.ceil(8_000_000 / LONG_RUN));
    const prose = 'Ordinary prose, with words and spaces. '.repeat(1_000);
    const whole: string[] = [];
    forEachBoundedPiece(prose, (piece) => whole.push(piece));
    expect(whole).toEqual([prose]);
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

/** Pieces of text the tokenizer treats very differently: prose, CJK, emoji (surrogate pairs), lone surrogates, runs. */
const piece = fc.oneof(
  fc.string({ unit: 'grapheme-ascii', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code)), maxLength: 20 }),
  fc.constantFrom(
    '漢字かな交じり文',
    '東京の天気は晴れです。',
    '🚀',
    '👩‍👩‍👧‍👦',
    '🇫🇷',
    ' ',
    '\n',
    '<|endoftext|>',
    'ünïcödé',
    '{"a":[1,2]}',
  ),
  // Long runs without spaces are counted in slices of 256 UTF-16 units, which may cut a surrogate pair.
  fc
    .tuple(fc.constantFrom('x', '🚀', 'é', '漢', '=', 'a🚀'), fc.integer({ min: 100, max: 900 }))
    .map(([unit, times]) => unit.repeat(times)),
);
const text = fc.array(piece, { maxLength: 8 }).map((pieces) => pieces.join(''));
const block: fc.Arbitrary<ContentBlock> = fc.oneof(
  text.map((value) => ({ type: 'text' as const, text: value })),
  text.map((value) => ({ type: 'reasoning' as const, text: value })),
  fc
    .tuple(text, text)
    .map(([name, argumentsJson]) => ({ type: 'tool-call' as const, id: 'call_1', name, argumentsJson })),
  fc.constant({ type: 'image' as const, source: { kind: 'url' as const, url: 'https://example.com/a.png' } }),
  fc.constant({
    type: 'document' as const,
    source: { kind: 'base64' as const, mediaType: 'application/pdf', data: 'JVBERi0=' },
  }),
  fc.array(text, { maxLength: 3 }).map((texts) => ({
    type: 'tool-result' as const,
    toolCallId: 'call_1',
    isError: false,
    content: [
      ...texts.map((value) => ({ type: 'text' as const, text: value })),
      { type: 'image' as const, source: { kind: 'url' as const, url: 'https://example.com/b.png' } },
    ],
  })),
);
const request: fc.Arbitrary<CanonicalRequest> = fc
  .record({
    system: fc.array(
      text.map((value) => ({ type: 'text' as const, text: value })),
      { maxLength: 2 },
    ),
    messages: fc.array(
      fc.record({
        role: fc.constantFrom('user' as const, 'assistant' as const),
        content: fc.array(block, { maxLength: 4 }),
      }),
      { maxLength: 4 },
    ),
    tools: fc.option(
      fc.array(
        fc.record({
          name: text,
          description: fc.option(text, { nil: undefined }),
          parameters: fc.dictionary(text, text, { maxKeys: 3 }),
        }),
        { maxLength: 2 },
      ),
      { nil: undefined },
    ),
  })
  .map((parts) => ({ ...requestWith([]), ...parts }));

describe('upper bound of the input tokens (UTF-8 bytes)', () => {
  it('is at least the tokenizer count of any text', () => {
    fc.assert(
      fc.property(text, (value) => utf8UpperBound(value) >= countTextTokens(value)),
      { numRuns: 400 },
    );
  });

  it('is at least the estimate of any request: texts, reasoning, tool calls and results, images, documents, tools', () => {
    fc.assert(
      fc.property(request, (value) => upperBoundRequestInputTokens(value) >= estimateRequestInputTokens(value)),
      { numRuns: 200 },
    );
  });

  it('holds for surrogate pairs cut by the long-run slices, and for emoji written whole', () => {
    for (const value of [
      '🚀'.repeat(2_000),
      `x${'🚀'.repeat(2_000)}`,
      `${'a🚀'.repeat(700)} ${'👩‍👩‍👧‍👦'.repeat(300)}`,
    ]) {
      expect(utf8UpperBound(value)).toBeGreaterThanOrEqual(countTextTokens(value));
    }
  });

  it('holds beyond the exact budget, whatever the first texts counted (dense then plain, plain then dense)', () => {
    const dense = '漢字かな交じり文🚀'.repeat(Math.ceil(EXACT_CHARS_PER_REQUEST / 10));
    const plain = 'The quick brown fox jumps over the lazy dog. '.repeat(4_000);
    const base64ish = Buffer.from(Array.from({ length: 90_000 }, (_, index) => (index * 7919) % 256)).toString(
      'base64',
    );
    for (const texts of [
      [dense, plain],
      [plain, dense],
      [base64ish, dense, plain],
      [`${'x'.repeat(EXACT_CHARS_PER_REQUEST - 1)}🚀🚀`, plain],
    ]) {
      const value = requestWith(texts);
      expect(upperBoundRequestInputTokens(value)).toBeGreaterThanOrEqual(estimateRequestInputTokens(value));
    }
  });

  it('adds the same framing and flats as the estimate: an empty text and an image count alike', () => {
    const value: CanonicalRequest = {
      ...requestWith(['']),
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: '' },
            { type: 'image', source: { kind: 'url', url: 'https://example.com/a.png' } },
          ],
        },
      ],
    };
    expect(upperBoundRequestInputTokens(value)).toBe(estimateRequestInputTokens(value));
  });
});

describe('tokenizer loading', () => {
  const text =
    'Billing counts must not depend on how the tokenizer was loaded: <|endoftext|> ünïcödé 🚀 ' + 'x'.repeat(300);

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
