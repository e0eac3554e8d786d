import { describe, expect, it } from 'vitest';
import { toGeminiParameters, toGeminiSchema } from './gemini-json-schema.js';

describe('toGeminiSchema (JSON Schema → Gemini OpenAPI subset)', () => {
  it('inlines $ref into $defs and definitions, with sibling keywords overriding the target', () => {
    const schema = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: {
        home: { $ref: '#/$defs/Address', description: 'Where the user lives' },
        work: { $ref: '#/definitions/Address' },
      },
      required: ['home'],
      $defs: { Address: { type: 'object', description: 'A postal address', properties: { city: { type: 'string' } }, required: ['city'] } },
      definitions: { Address: { type: 'object', properties: { street: { type: 'string' } } } },
      additionalProperties: false,
    };
    expect(toGeminiSchema(schema)).toEqual({
      type: 'object',
      properties: {
        home: { type: 'object', description: 'Where the user lives', properties: { city: { type: 'string' } }, required: ['city'] },
        work: { type: 'object', properties: { street: { type: 'string' } } },
      },
      required: ['home'],
    });
  });

  it('cuts a recursive reference to a bare schema of its type instead of looping', () => {
    const schema = {
      type: 'object',
      properties: { root: { $ref: '#/$defs/Node' } },
      $defs: { Node: { type: 'object', properties: { value: { type: 'string' }, children: { type: 'array', items: { $ref: '#/$defs/Node' } } } } },
    };
    expect(toGeminiSchema(schema).properties?.root).toEqual({
      type: 'object',
      properties: { value: { type: 'string' }, children: { type: 'array', items: { type: 'object' } } },
    });
  });

  it('turns anyOf [X, null] and type arrays with null into nullable X', () => {
    const schema = {
      type: 'object',
      properties: {
        a: { anyOf: [{ type: 'string', maxLength: 5 }, { type: 'null' }], description: 'optional a' },
        b: { type: ['integer', 'null'] },
        c: { oneOf: [{ type: 'string' }, { type: 'number' }, { type: 'null' }] },
        d: { type: ['string', 'number'] },
        e: { enum: ['x', 'y', null] },
      },
    };
    expect(toGeminiSchema(schema).properties).toEqual({
      a: { type: 'string', maxLength: 5, description: 'optional a', nullable: true },
      b: { type: 'integer', nullable: true },
      c: { anyOf: [{ type: 'string' }, { type: 'number' }], nullable: true },
      d: { anyOf: [{ type: 'string' }, { type: 'number' }] },
      e: { type: 'string', enum: ['x', 'y'], nullable: true },
    });
  });

  it('drops keywords Gemini rejects, keeps the formats it knows, const becomes enum, non-string enums go, arrays get items', () => {
    const schema = {
      type: 'object',
      strict: true,
      additionalProperties: false,
      properties: {
        when: { type: 'string', format: 'date-time' },
        mail: { type: 'string', format: 'email', examples: ['a@b.c'] },
        ratio: { type: 'number', format: 'double', minimum: 0, maximum: 1, exclusiveMaximum: 1 },
        kind: { const: 'fixed' },
        level: { type: 'integer', enum: [1, 2, 3] },
        tags: { type: 'array', items: { type: 'string' }, minItems: 1, uniqueItems: true },
        nested: { type: 'object', properties: {}, additionalProperties: { type: 'string' } },
        anything: { type: 'array' },
      },
      required: ['when', 'ghost'],
    };
    expect(toGeminiSchema(schema)).toEqual({
      type: 'object',
      properties: {
        when: { type: 'string', format: 'date-time' },
        mail: { type: 'string' },
        ratio: { type: 'number', format: 'double', minimum: 0, maximum: 1 },
        kind: { type: 'string', enum: ['fixed'] },
        level: { type: 'integer' },
        tags: { type: 'array', items: { type: 'string' }, minItems: 1 },
        nested: { type: 'object' },
        anything: { type: 'array', items: { type: 'string' } },
      },
      // A required name with no property is rejected by Gemini.
      required: ['when'],
    });
  });

  it('merges allOf members', () => {
    const schema = {
      allOf: [
        { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] },
        { $ref: '#/$defs/B' },
      ],
      description: 'both',
      $defs: { B: { properties: { b: { type: 'boolean' } }, required: ['b'] } },
    };
    expect(toGeminiSchema(schema)).toEqual({
      type: 'object',
      description: 'both',
      properties: { a: { type: 'string' }, b: { type: 'boolean' } },
      required: ['a', 'b'],
    });
  });

  it('adds propertyOrdering only when asked (structured output keeps the schema order)', () => {
    const schema = { type: 'object', properties: { zeta: { type: 'string' }, alpha: { type: 'object', properties: { y: { type: 'string' }, x: { type: 'string' } } } } };
    expect(toGeminiSchema(schema).propertyOrdering).toBeUndefined();
    const ordered = toGeminiSchema(schema, { keepPropertyOrder: true });
    expect(ordered.propertyOrdering).toEqual(['zeta', 'alpha']);
    expect(ordered.properties?.alpha?.propertyOrdering).toEqual(['y', 'x']);
  });

  it('leaves out the parameters of a tool without arguments (Gemini rejects an OBJECT with empty properties)', () => {
    expect(toGeminiParameters(undefined)).toBeUndefined();
    expect(toGeminiParameters({ type: 'object', properties: {} })).toBeUndefined();
    expect(toGeminiParameters({ type: 'object', additionalProperties: false })).toBeUndefined();
    expect(toGeminiParameters({ type: 'object', properties: { q: { type: 'string' } } })).toEqual({ type: 'object', properties: { q: { type: 'string' } } });
  });
});
