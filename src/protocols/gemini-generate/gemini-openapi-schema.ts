/**
 * Google's `Schema` (the OpenAPI 3.0 subset of `parameters` and `responseSchema`) → JSON Schema, the canonical
 * form every adapter takes (docs/protocols/translation.md#tool-definitions). The differences: upper-case type names
 * (`OBJECT`), `nullable` instead of a `null` type, and `propertyOrdering`, which only orders keys (JSON Schema keeps
 * the key order already). Everything else has the same name and meaning in both. Recursion is bounded by the JSON
 * body's depth limit (json-body-parser.ts), so a hostile schema cannot overflow the stack.
 */

const TYPE_NAMES: Readonly<Record<string, string>> = {
  STRING: 'string',
  NUMBER: 'number',
  INTEGER: 'integer',
  BOOLEAN: 'boolean',
  ARRAY: 'array',
  OBJECT: 'object',
  NULL: 'null',
};

const SCHEMA_MAPS = new Set(['properties']);
const SCHEMA_LISTS = new Set(['anyOf']);
const SCHEMA_VALUES = new Set(['items']);
const DROPPED = new Set(['propertyOrdering', 'nullable', 'example']);

export function openApiToJsonSchema(schema: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (DROPPED.has(key) || value === undefined || value === null) continue;
    if (key === 'type' && typeof value === 'string') {
      const type = TYPE_NAMES[value.toUpperCase()];
      if (type !== undefined) out.type = type;
      continue;
    }
    if (SCHEMA_MAPS.has(key) && isObject(value)) {
      out[key] = Object.fromEntries(
        Object.entries(value).map(([name, inner]) => [name, isObject(inner) ? openApiToJsonSchema(inner) : inner]),
      );
    } else if (SCHEMA_LISTS.has(key) && Array.isArray(value)) {
      out[key] = value.map((inner: unknown) => (isObject(inner) ? openApiToJsonSchema(inner) : inner));
    } else if (SCHEMA_VALUES.has(key) && isObject(value)) {
      out[key] = openApiToJsonSchema(value);
    } else {
      out[key] = value;
    }
  }
  if (schema.nullable === true && typeof out.type === 'string') out.type = [out.type, 'null'];
  return out;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
