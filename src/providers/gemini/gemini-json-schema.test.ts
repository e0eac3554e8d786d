import { describe, expect, it } from 'vitest';
import { toGeminiJsonSchema } from './gemini-json-schema.js';

describe('toGeminiJsonSchema (parametersJsonSchema / responseJsonSchema)', () => {
  it('keeps JSON Schema as written: additionalProperties, type arrays, const, anyOf, formats', () => {
    const schema = {
      type: 'object',
      properties: {
        mode: { type: 'string', enum: ['a', 'b'] },
        limit: { type: ['integer', 'null'], minimum: 1 },
        kind: { const: 'fixed' },
        when: { type: 'string', format: 'uuid' },
        either: { anyOf: [{ type: 'string' }, { type: 'number' }] },
      },
      required: ['mode'],
      additionalProperties: false,
    };
    expect(toGeminiJsonSchema(schema)).toEqual(schema);
  });

  it('removes $schema everywhere and inlines $ref from $defs, siblings overriding the target', () => {
    const converted = toGeminiJsonSchema({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      $defs: { Point: { type: 'object', description: 'a point', properties: { x: { type: 'number' } } } },
      properties: { at: { $ref: '#/$defs/Point', description: 'where' }, nested: { $schema: 'x', type: 'string' } },
    });
    expect(converted).toEqual({
      type: 'object',
      properties: {
        at: { type: 'object', description: 'where', properties: { x: { type: 'number' } } },
        nested: { type: 'string' },
      },
    });
  });

  it('cuts a recursive reference to a bare type', () => {
    const converted = toGeminiJsonSchema({
      type: 'object',
      definitions: { Node: { type: 'object', properties: { child: { $ref: '#/definitions/Node' } } } },
      properties: { root: { $ref: '#/definitions/Node' } },
    });
    expect(converted).toEqual({
      type: 'object',
      properties: { root: { type: 'object', properties: { child: { type: 'object' } } } },
    });
  });

  it('never treats property names or data as keywords', () => {
    const schema = {
      type: 'object',
      properties: { $schema: { type: 'string' }, $ref: { type: 'string', default: { $ref: '#/x' } } },
    };
    expect(toGeminiJsonSchema(schema)).toEqual(schema);
  });
});
