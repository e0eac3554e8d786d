/**
 * Google's JSON API takes field names in camelCase and in snake_case (proto field names): curl examples and the
 * Python SDK send `system_instruction`, `generation_config`, `inline_data`. Both are accepted, as Google does:
 * field names are turned to camelCase before validation. Values that are the client's own data (function
 * arguments and responses, JSON schemas) are copied as they are: their keys are not Google's field names.
 * Recursion is bounded by the JSON body's depth limit (json-body-parser.ts).
 */
const OPAQUE_VALUES: ReadonlySet<string> = new Set([
  'args',
  'response',
  'parameters',
  'parametersJsonSchema',
  'responseSchema',
  'responseJsonSchema',
  'labels',
]);

const SNAKE_SEGMENT = /_([a-z0-9])/g;

function camelOf(name: string): string {
  return name.includes('_') ? name.replace(SNAKE_SEGMENT, (_, letter: string) => letter.toUpperCase()) : name;
}

export function normalizeFieldNames(body: Record<string, unknown>): Record<string, unknown> {
  return normalizeObject(body);
}

function normalizeObject(value: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    const name = camelOf(key);
    // The camelCase spelling wins when a client sent both.
    if (name !== key && Object.hasOwn(value, name)) continue;
    out[name] = OPAQUE_VALUES.has(name) ? inner : normalizeValue(inner);
  }
  return out;
}

function normalizeValue(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalizeValue);
  if (value !== null && typeof value === 'object') return normalizeObject(value as Record<string, unknown>);
  return value;
}
