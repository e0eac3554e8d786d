import { describe, expect, it } from 'vitest';
import { DeltaTemplate } from './delta-template.js';

const head =
  '{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":';
const tail = '},"logprobs":null,"finish_reason":null}]}';
const chunk = (literal: string) => `${head}${literal}${tail}`;

function learned(): DeltaTemplate {
  const template = new DeltaTemplate('content');
  template.learn(chunk('"Hello"'), 'Hello');
  return template;
}

describe('DeltaTemplate', () => {
  it('matches nothing before it learned a shape', () => {
    expect(new DeltaTemplate('content').match(chunk('"Hello"'))).toBeUndefined();
  });

  it('reads the text of an event with the learned head and tail, escapes included', () => {
    const template = learned();
    expect(template.match(chunk('" world"'))).toBe(' world');
    expect(template.match(chunk('""'))).toBe('');
    for (const text of ['say "hi"', 'line\nbreak', 'back\\slash', 'tab\t', 'é ü 日本', '\u2028', '😀']) {
      expect(template.match(chunk(JSON.stringify(text)))).toBe(text);
    }
    expect(template.match(chunk('"caf\\u00e9"'))).toBe('café');
  });

  it('leaves every other shape to JSON.parse', () => {
    const template = learned();
    // A finish, usage, another field, padding: not the learned head or tail.
    expect(template.match(`${head}"x"},"logprobs":null,"finish_reason":"stop"}]}`)).toBeUndefined();
    expect(template.match(`${head}"x"${tail.slice(0, -1)},"usage":{"total_tokens":3}}`)).toBeUndefined();
    expect(template.match(`${head.replace('"index":0', '"index":1')}"x"${tail}`)).toBeUndefined();
    // Not exactly one string literal in the hole.
    expect(template.match(chunk('"a","refusal":"b"'))).toBeUndefined();
    expect(template.match(chunk('"a"b"'))).toBeUndefined();
    expect(template.match(chunk('"a\\"'))).toBeUndefined();
    expect(template.match(chunk('null'))).toBeUndefined();
    expect(template.match(chunk('12'))).toBeUndefined();
    expect(template.match(chunk('"raw\nline"'))).toBeUndefined();
    expect(template.match(chunk('"'))).toBeUndefined();
    expect(template.match(chunk(''))).toBeUndefined();
  });

  it('learns nothing when the key occurs twice or the vendor escaped the text differently', () => {
    const twice = new DeltaTemplate('content');
    twice.learn(`{"content":"a","delta":{"content":"b"}}`, 'b');
    expect(twice.match(`{"content":"a","delta":{"content":"c"}}`)).toBeUndefined();
    const escaped = new DeltaTemplate('content');
    escaped.learn(chunk('"caf\\u00e9"'), 'café');
    expect(escaped.match(chunk('"x"'))).toBeUndefined();
    escaped.learn(chunk('"plain"'), 'plain');
    expect(escaped.match(chunk('"x"'))).toBe('x');
  });

  it('lets a last padding field vary when told its key (OpenAI obfuscation), and nothing else', () => {
    const padded = (literal: string, padding: string) =>
      `${head}${literal}},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":${padding}}`;
    const template = new DeltaTemplate('content', 'obfuscation');
    template.learn(padded('"Hello"', '"xY3"'), 'Hello');
    expect(template.match(padded('" world"', '"a1b2c3d4"'))).toBe(' world');
    expect(template.match(padded(JSON.stringify('say "hi"'), '""'))).toBe('say "hi"');
    expect(template.match(padded('"x"', '12'))).toBeUndefined();
    expect(template.match(padded('"x"', '"a","usage":{"total_tokens":1}'))).toBeUndefined();
    expect(
      template.match(`${head}"x"},"logprobs":null,"finish_reason":"stop"}],"usage":null,"obfuscation":"ab"}`),
    ).toBeUndefined();
    expect(template.match(`${head}"x"},"logprobs":null,"finish_reason":null}],"usage":null}`)).toBeUndefined();
    // Without the key, the padding is part of the fixed tail.
    const strict = new DeltaTemplate('content');
    strict.learn(padded('"Hello"', '"xY3"'), 'Hello');
    expect(strict.match(padded('" world"', '"xY3"'))).toBe(' world');
    expect(strict.match(padded('" world"', '"other"'))).toBeUndefined();
  });
});
