import { describe, expect, it } from 'vitest';
import { JSON_LIMITS, shapeProblem } from './json-body-parser.js';

function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let level = 0; level < depth; level++) value = level % 2 === 0 ? [value] : { a: value };
  return value;
}

describe('shapeProblem', () => {
  it('accepts ordinary request bodies, nesting up to the limit included', () => {
    expect(shapeProblem({ model: 'beta-5.4', messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }] })).toBeUndefined();
    expect(shapeProblem(nested(JSON_LIMITS.maxDepth))).toBeUndefined();
    expect(shapeProblem('a string')).toBeUndefined();
    expect(shapeProblem(null)).toBeUndefined();
  });

  it('refuses one level too deep, without recursion even at extreme depths', () => {
    expect(shapeProblem(nested(JSON_LIMITS.maxDepth + 1))?.message).toMatch(/deeper than 64 levels/);
    expect(shapeProblem(JSON.parse('['.repeat(200_000) + ']'.repeat(200_000)))?.code).toBe('invalid_request');
  });

  it('refuses over-long keys anywhere and an over-long model', () => {
    expect(shapeProblem({ a: [{ ['k'.repeat(JSON_LIMITS.maxKeyLength + 1)]: 1 }] })?.message).toMatch(/key longer than 1024/);
    expect(shapeProblem({ ['k'.repeat(JSON_LIMITS.maxKeyLength)]: 1 })).toBeUndefined();
    expect(shapeProblem({ model: 'm'.repeat(257) })).toMatchObject({ code: 'invalid_request', param: 'model' });
  });
});
