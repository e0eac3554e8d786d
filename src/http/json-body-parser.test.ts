import { describe, expect, it } from 'vitest';
import { JSON_LIMITS, shapeProblem, textMayBreakShape } from './json-body-parser.js';

function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let level = 0; level < depth; level++) value = level % 2 === 0 ? [value] : { a: value };
  return value;
}

describe('shapeProblem', () => {
  it('accepts ordinary request bodies, nesting up to the limit included', () => {
    expect(
      shapeProblem({ model: 'beta-5.4', messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }] }),
    ).toBeUndefined();
    expect(shapeProblem(nested(JSON_LIMITS.maxDepth))).toBeUndefined();
    expect(shapeProblem('a string')).toBeUndefined();
    expect(shapeProblem(null)).toBeUndefined();
  });

  it('refuses one level too deep, without recursion even at extreme depths', () => {
    expect(shapeProblem(nested(JSON_LIMITS.maxDepth + 1))?.message).toMatch(/deeper than 64 levels/);
    expect(shapeProblem(JSON.parse('['.repeat(200_000) + ']'.repeat(200_000)))?.code).toBe('invalid_request');
  });

  it('refuses over-long keys anywhere and an over-long model', () => {
    expect(shapeProblem({ a: [{ ['k'.repeat(JSON_LIMITS.maxKeyLength + 1)]: 1 }] })?.message).toMatch(
      /key longer than 1024/,
    );
    expect(shapeProblem({ ['k'.repeat(JSON_LIMITS.maxKeyLength)]: 1 })).toBeUndefined();
    expect(shapeProblem({ model: 'm'.repeat(257) })).toMatchObject({ code: 'invalid_request', param: 'model' });
  });

  it('refuses the keys the secure parser refuses, anywhere, and nothing else', () => {
    for (const text of [
      '{"__proto__":{"polluted":true}}',
      '[{"a":[{"__proto__":null}]}]',
      '{"a":{"constructor":{"prototype":{}}}}',
      '{"constructor":{"prototype":null}}',
    ]) {
      expect(shapeProblem(JSON.parse(text))).toMatchObject({ code: 'invalid_json' });
    }
    for (const text of [
      '{"constructor":{"type":"string"},"prototype":{}}',
      '{"constructor":"prototype"}',
      '{"constructor":null}',
      '{"a":"__proto__"}',
    ]) {
      expect(shapeProblem(JSON.parse(text))).toBeUndefined();
    }
  });
});

describe('textMayBreakShape', () => {
  it('lets a short, shallow body skip the walk', () => {
    expect(textMayBreakShape(JSON.stringify({ model: 'beta-5.4', messages: [{ role: 'user', content: 'hi' }] }))).toBe(
      false,
    );
  });

  it('sends every body that could break a limit to the walk', () => {
    // The shortest bodies that break the depth limit, and one opener short of the conservative threshold.
    const tooDeep = JSON.stringify(nested(JSON_LIMITS.maxDepth + 1));
    expect(textMayBreakShape(tooDeep)).toBe(true);
    expect(textMayBreakShape('['.repeat(JSON_LIMITS.maxDepth) + ']'.repeat(JSON_LIMITS.maxDepth))).toBe(true);
    expect(textMayBreakShape('['.repeat(JSON_LIMITS.maxDepth - 1) + ']'.repeat(JSON_LIMITS.maxDepth - 1))).toBe(false);
    // Any body that can hold an over-long key is walked.
    expect(textMayBreakShape(JSON.stringify({ ['k'.repeat(JSON_LIMITS.maxKeyLength + 1)]: 1 }))).toBe(true);
  });

  it('for any body it skips, the walk finds nothing beyond the model check', () => {
    for (let depth = 0; depth < JSON_LIMITS.maxDepth; depth++) {
      const text = JSON.stringify(nested(depth));
      if (!textMayBreakShape(text)) expect(shapeProblem(JSON.parse(text))).toBeUndefined();
    }
  });
});
