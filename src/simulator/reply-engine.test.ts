import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
import { buildReply, countTokens, generateText } from './reply-engine.js';

const base = { seedText: 'conversation-1', lastUserText: 'Please describe the river at dawn in a few words' };

describe('reply engine', () => {
  it('is deterministic and depends on the seed text', () => {
    expect(generateText(base)).toBe(generateText({ ...base }));
    expect(generateText(base)).not.toBe(generateText({ ...base, seedText: 'conversation-2' }));
    expect(generateText(base)).not.toBe(generateText({ ...base, variant: 1 }));
  });

  it('echoes the start of the last user message and honours words=N', () => {
    const reply = generateText({ ...base, words: 5 });
    expect(reply.startsWith('You said: "Please describe the river at dawn in a ...".')).toBe(true);
    expect(reply.split(' ')).toHaveLength(11 + 5);
    expect(generateText({ ...base, words: 0 })).toBe('You said: "Please describe the river at dawn in a ...".');
  });

  it('produces 12 to 40 filler words by default', () => {
    for (let seed = 0; seed < 50; seed++) {
      const words = generateText({ ...base, seedText: `s${seed}` }).split(' ').length - 11;
      expect(words).toBeGreaterThanOrEqual(12);
      expect(words).toBeLessThanOrEqual(40);
    }
  });

  it('counts completion tokens with the o200k tokenizer and splits pieces on token boundaries', () => {
    const reply = buildReply({ ...base, lastUserText: 'naïve 日本語 😀 <|endoftext|> text' });
    expect(reply.pieces.join('')).toBe(reply.text);
    expect(reply.completionTokens).toBe(encode(reply.text, { disallowedSpecial: new Set() }).length);
    expect(reply.completionTokens).toBe(countTokens(reply.text));
    expect(reply.pieces.length).toBeLessThanOrEqual(reply.completionTokens);
    expect(reply.pieces.every((piece) => !piece.includes('\uFFFD'))).toBe(true);
    expect(reply.end).toBe('end');
  });

  it('cuts at the token cap with end=length', () => {
    const full = buildReply(base);
    const capped = buildReply({ ...base, maxTokens: 7 });
    expect(capped.end).toBe('length');
    expect(capped.completionTokens).toBe(7);
    expect(countTokens(capped.text)).toBe(7);
    expect(full.text.startsWith(capped.text)).toBe(true);
    expect(buildReply({ ...base, maxTokens: full.completionTokens })).toEqual(full);
  });

  it('never emits half a character when the cap falls inside one', () => {
    const text = buildReply({ ...base, lastUserText: '😀😀😀' });
    for (let cap = 1; cap < 12; cap++) {
      const capped = buildReply({ ...base, lastUserText: '😀😀😀', maxTokens: cap });
      expect(capped.text.includes('\uFFFD')).toBe(false);
      expect(text.text.startsWith(capped.text)).toBe(true);
      expect(capped.completionTokens).toBe(cap);
    }
  });

  it('stops before the earliest stop sequence, which is not included', () => {
    const full = generateText(base);
    const reply = buildReply({ ...base, stopSequences: ['zzz', 'river', 'dawn'] });
    expect(reply.text).toBe(full.slice(0, full.indexOf('river')));
    expect(reply.end).toBe('stop-sequence');
    expect(reply.stopSequence).toBe('river');
    expect(buildReply({ ...base, stopSequences: ['river'], maxTokens: 2 }).end).toBe('length');
  });
});
