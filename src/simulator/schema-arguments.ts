/**
 * Deterministic tool-call arguments generated from a tool's parameter schema: JSON Schema (OpenAI,
 * Anthropic, DeepSeek, Gemini `parametersJsonSchema`) or Gemini's OpenAPI subset (`type: "STRING"`,
 * `nullable`). Every property is filled, so required ones always are:
 *
 *   string   the prompt's significant words, the last one first ("weather in Lisbon" → "Lisbon"), then the
 *            one before it, and so on; `format` (date, date-time, email, uri, uuid) and min/maxLength honoured
 *   number   1, 2, 3 … per number generated, clamped into minimum/maximum
 *   boolean  true;  enum → its first value;  const → it;  null → null
 *   array    max(1, minItems) items (at most 3);  anyOf/oneOf → the first non-null branch;  local $ref resolved
 *
 * So a test can predict the arguments from its prompt, and a gateway's argument plumbing is checked end to end.
 */

import { stripDirectives } from './fault-directives.js';

type Json = Record<string, unknown>;

const MAX_DEPTH = 8;
const MAX_ARRAY_ITEMS = 3;
/** Words worth putting in an argument: letters/digits runs; the directive's own text is excluded. */
const WORD = /[\p{L}\p{N}][\p{L}\p{N}_'-]*/gu;
const MIN_WORD_LENGTH = 3;
const COMMON_WORDS: ReadonlySet<string> = new Set([
  'the',
  'and',
  'for',
  'you',
  'are',
  'was',
  'with',
  'what',
  'who',
  'how',
  'why',
  'when',
  'where',
  'which',
  'this',
  'that',
  'these',
  'those',
  'please',
  'can',
  'could',
  'would',
  'should',
  'tell',
  'give',
  'call',
  'use',
  'from',
  'about',
  'into',
  'its',
  "it's",
  "what's",
  'now',
  'today',
  'there',
  'here',
  'then',
  'than',
]);

/** Significant words of a prompt, in order (directives removed). */
export function promptWords(text: string): string[] {
  const words: string[] = [];
  for (const match of stripDirectives(text).matchAll(WORD)) {
    const word = match[0];
    if (word.length >= MIN_WORD_LENGTH && !COMMON_WORDS.has(word.toLowerCase())) words.push(word);
  }
  return words;
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function schemaType(schema: Json): string | undefined {
  const type = schema['type'];
  if (typeof type === 'string') return type.toLowerCase();
  if (Array.isArray(type)) {
    const first = type.find((item) => typeof item === 'string' && item.toLowerCase() !== 'null');
    return typeof first === 'string' ? first.toLowerCase() : 'null';
  }
  if (isObject(schema['properties'])) return 'object';
  if (schema['items'] !== undefined) return 'array';
  return undefined;
}

function numberOr(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}

class ArgumentGenerator {
  private strings = 0;
  private numbers = 0;

  constructor(
    private readonly words: readonly string[],
    private readonly root: Json,
  ) {}

  value(schema: unknown, depth: number): unknown {
    if (!isObject(schema)) return this.string({});
    if ('const' in schema) return schema['const'];
    const enumValues = schema['enum'];
    if (Array.isArray(enumValues) && enumValues.length > 0) return enumValues[0];
    const ref = schema['$ref'];
    if (typeof ref === 'string') return depth < MAX_DEPTH ? this.value(this.resolve(ref), depth + 1) : null;
    for (const key of ['anyOf', 'oneOf', 'allOf']) {
      const branches = schema[key];
      if (Array.isArray(branches) && branches.length > 0) {
        const branch = branches.find((item) => !isObject(item) || schemaType(item) !== 'null') ?? branches[0];
        return this.value(branch, depth + 1);
      }
    }
    switch (schemaType(schema)) {
      case 'object':
        return depth < MAX_DEPTH ? this.object(schema, depth) : {};
      case 'array':
        return depth < MAX_DEPTH ? this.array(schema, depth) : [];
      case 'integer':
        return this.number(schema, true);
      case 'number':
        return this.number(schema, false);
      case 'boolean':
        return true;
      case 'null':
        return null;
      default:
        return this.string(schema);
    }
  }

  object(schema: Json, depth: number): Json {
    const out: Json = {};
    const properties = isObject(schema['properties']) ? schema['properties'] : {};
    for (const [name, property] of Object.entries(properties)) out[name] = this.value(property, depth + 1);
    const required = schema['required'];
    if (Array.isArray(required)) {
      for (const name of required) if (typeof name === 'string' && !(name in out)) out[name] = this.string({});
    }
    return out;
  }

  private array(schema: Json, depth: number): unknown[] {
    const items = schema['items'];
    if (Array.isArray(items)) return items.map((item) => this.value(item, depth + 1));
    const min = Math.max(1, Math.floor(numberOr(schema['minItems'], 1)));
    const count = Math.min(min, MAX_ARRAY_ITEMS, Math.floor(numberOr(schema['maxItems'], MAX_ARRAY_ITEMS)));
    return Array.from({ length: Math.max(0, count) }, () => this.value(items, depth + 1));
  }

  private number(schema: Json, integer: boolean): number {
    let value = ++this.numbers;
    const minimum = numberOr(schema['minimum'], numberOr(schema['exclusiveMinimum'], -Infinity));
    const maximum = numberOr(schema['maximum'], numberOr(schema['exclusiveMaximum'], Infinity));
    if (value <= minimum) value = schema['exclusiveMinimum'] === undefined ? minimum : minimum + 1;
    if (value >= maximum) value = schema['exclusiveMaximum'] === undefined ? maximum : maximum - 1;
    return integer ? Math.ceil(value) : value;
  }

  private string(schema: Json): string {
    const index = this.strings++;
    const word =
      this.words.length === 0
        ? 'example'
        : (this.words[this.words.length - 1 - (index % this.words.length)] ?? 'example');
    let value: string;
    switch (schema['format']) {
      case 'date':
        value = '2026-01-15';
        break;
      case 'date-time':
        value = '2026-01-15T09:30:00Z';
        break;
      case 'time':
        value = '09:30:00';
        break;
      case 'email':
        value = `${word.toLowerCase()}@example.com`;
        break;
      case 'uri':
      case 'url':
        value = `https://example.com/${encodeURIComponent(word.toLowerCase())}`;
        break;
      case 'uuid':
        value = `00000000-0000-4000-8000-${String(index).padStart(12, '0')}`;
        break;
      default:
        value = word;
    }
    const minLength = numberOr(schema['minLength'], 0);
    const maxLength = numberOr(schema['maxLength'], Infinity);
    if (value.length < minLength) value = value.padEnd(minLength, 'x');
    if (value.length > maxLength) value = value.slice(0, Math.max(0, maxLength));
    return value;
  }

  private resolve(ref: string): unknown {
    if (!ref.startsWith('#/')) return {};
    let node: unknown = this.root;
    for (const segment of ref.slice(2).split('/')) {
      node = isObject(node) ? node[segment.replaceAll('~1', '/').replaceAll('~0', '~')] : undefined;
    }
    return node ?? {};
  }
}

/**
 * Arguments for one call. The result is always a JSON object, as every vendor requires of tool input; a
 * schema that is absent or not of object type gives `{}` (or its object-typed properties).
 */
export function argumentsFromSchema(schema: unknown, promptText: string): Json {
  const root = isObject(schema) ? schema : {};
  const generator = new ArgumentGenerator(promptWords(promptText), root);
  return generator.object(root, 0);
}
