import type { GeminiSchema } from './gemini-wire.js';

/**
 * JSON Schema (what OpenAI and Anthropic clients send) → the OpenAPI 3.0 subset of Gemini's `parameters` and
 * `responseSchema` (translation.md §5.1, gemini.md §2.1).
 *
 * Why not `parametersJsonSchema` / `responseJsonSchema`, which take JSON Schema as is: they are recent and
 * which models accept them is still an open doubt (translation.md §13), while the subset works on every model.
 * The conversion loses little for the schemas tools actually use:
 * - `$ref` to `#/…` (`$defs`, `definitions`) is inlined; a recursive reference is cut to a bare `{type}`.
 * - `anyOf`/`oneOf` with a `{type: "null"}` member, type arrays with `"null"` and `null` in `enum` become
 *   `nullable: true`; one remaining member is inlined, several stay as `anyOf` (`oneOf` is read as `anyOf`).
 * - `allOf` members are merged into one schema.
 * - `const` becomes a one-value `enum`; `enum` is kept only when all values are strings (Gemini's rule).
 * - `format` is kept only where Gemini knows it (string: date-time, enum; number: float, double; integer:
 *   int32, int64): others have been rejected with a 400.
 * - Every other keyword (`$schema`, `additionalProperties`, `strict`, `examples`, `not`, …) is dropped.
 * - Empty `properties` maps are dropped: Gemini rejects an OBJECT whose `properties` is empty.
 * - An array without `items` gets string items: Gemini rejects an ARRAY without them.
 */

export interface GeminiSchemaOptions {
  /**
   * Add `propertyOrdering` (the JSON order of `properties`) to every object. Gemini otherwise generates
   * structured output with keys sorted alphabetically, which changes what the model writes first.
   */
  keepPropertyOrder?: boolean;
}

type JsonObject = Record<string, unknown>;

const SUPPORTED_FORMATS: Readonly<Record<string, ReadonlySet<string>>> = {
  string: new Set(['date-time', 'enum']),
  number: new Set(['float', 'double']),
  integer: new Set(['int32', 'int64']),
};

/** Keywords copied unchanged when their value has the expected JSON type. */
const COPIED_NUMBERS = ['minItems', 'maxItems', 'minProperties', 'maxProperties', 'minLength', 'maxLength', 'minimum', 'maximum'] as const;
const COPIED_STRINGS = ['title', 'description', 'pattern'] as const;

/** Longest chain of nested `$ref`s followed before a reference counts as recursive. */
const MAX_REF_DEPTH = 32;

export function toGeminiSchema(schema: JsonObject, options: GeminiSchemaOptions = {}): GeminiSchema {
  return new SchemaConverter(schema, options).convert(schema, []);
}

/**
 * The cleaned schema of a tool's arguments, or undefined when the tool takes no arguments: Gemini wants
 * `parameters` left out rather than an object schema without properties.
 */
export function toGeminiParameters(schema: JsonObject | undefined): GeminiSchema | undefined {
  if (schema === undefined) return undefined;
  const converted = toGeminiSchema(schema);
  if (converted.properties === undefined && converted.anyOf === undefined && (converted.type === undefined || converted.type === 'object')) {
    return undefined;
  }
  return converted;
}

class SchemaConverter {
  constructor(
    private readonly root: JsonObject,
    private readonly options: GeminiSchemaOptions,
  ) {}

  /** `refStack`: the `$ref`s being expanded above this node, to cut recursion. */
  convert(node: unknown, refStack: readonly string[]): GeminiSchema {
    if (!isObject(node)) return {};
    const resolved = this.resolveRef(node, refStack);
    if (resolved.cut !== undefined) return resolved.cut;
    const schema = this.mergeAllOf(resolved.node, resolved.refStack);
    const stack = resolved.refStack;

    const out: GeminiSchema = {};
    let nullable = schema.nullable === true;

    const types = typeList(schema.type);
    if (types.includes('null')) nullable = true;
    const nonNullTypes = types.filter((type) => type !== 'null');
    if (nonNullTypes.length === 1) out.type = nonNullTypes[0]!;
    else if (nonNullTypes.length > 1) out.anyOf = nonNullTypes.map((type) => ({ type }));

    for (const key of COPIED_STRINGS) if (typeof schema[key] === 'string') out[key] = schema[key];
    for (const key of COPIED_NUMBERS) if (typeof schema[key] === 'number') out[key] = schema[key];
    if ('default' in schema && schema.default !== undefined) out.default = schema.default;
    if ('example' in schema && schema.example !== undefined) out.example = schema.example;

    const enumValues = Array.isArray(schema.enum) ? schema.enum : 'const' in schema ? [schema.const] : undefined;
    if (enumValues !== undefined) {
      if (enumValues.includes(null)) nullable = true;
      const values = enumValues.filter((value) => value !== null);
      if (values.length > 0 && values.every((value): value is string => typeof value === 'string')) {
        out.enum = values;
        out.type ??= 'string';
      }
    }

    if (typeof schema.format === 'string' && out.type !== undefined && SUPPORTED_FORMATS[out.type]?.has(schema.format)) {
      out.format = schema.format;
    }

    if (isObject(schema.properties)) {
      // fromEntries defines own properties, so a property named `__proto__` stays a property.
      const properties: Record<string, GeminiSchema> = Object.fromEntries(
        Object.entries(schema.properties).map(([name, property]) => [name, this.convert(property, stack)]),
      );
      const names = Object.keys(properties);
      if (names.length > 0) {
        out.properties = properties;
        out.type ??= 'object';
        if (this.options.keepPropertyOrder === true) out.propertyOrdering = names;
        if (Array.isArray(schema.required)) {
          // Gemini rejects a required name that has no property.
          const required = schema.required.filter((name): name is string => typeof name === 'string' && Object.hasOwn(properties, name));
          if (required.length > 0) out.required = required;
        }
      }
    }

    // Tuple forms (`prefixItems`, `items: [...]`) have no counterpart: the first item schema stands for all.
    const items = Array.isArray(schema.items) ? schema.items[0] : (schema.items ?? (Array.isArray(schema.prefixItems) ? schema.prefixItems[0] : undefined));
    if (items !== undefined) out.items = this.convert(items, stack);
    // Gemini rejects an ARRAY without `items` ("items: missing field"); strings are the least surprising guess.
    else if (out.type === 'array') out.items = { type: 'string' };

    const alternatives = Array.isArray(schema.anyOf) ? schema.anyOf : Array.isArray(schema.oneOf) ? schema.oneOf : undefined;
    if (alternatives !== undefined) {
      const members: GeminiSchema[] = [];
      for (const member of alternatives) {
        if (isNullSchema(member)) nullable = true;
        else members.push(this.convert(member, stack));
      }
      if (members.length === 1) {
        // The node's own keywords (its description, typically) win over the member's.
        Object.assign(out, { ...members[0], ...out });
      } else if (members.length > 1) {
        out.anyOf = members;
      }
    }

    if (nullable) out.nullable = true;
    return out;
  }

  /** Follows `$ref` (with sibling keywords overriding the target's); a reference already being expanded is cut. */
  private resolveRef(node: JsonObject, refStack: readonly string[]): { node: JsonObject; refStack: readonly string[]; cut?: GeminiSchema } {
    let current = node;
    let stack = refStack;
    while (typeof current.$ref === 'string') {
      const ref = current.$ref;
      const target = this.lookup(ref);
      const { $ref: _ignored, ...siblings } = current;
      if (target === undefined) return { node: siblings, refStack: stack };
      if (stack.includes(ref) || stack.length >= MAX_REF_DEPTH) {
        const type = typeof target.type === 'string' ? target.type : 'object';
        const description = typeof siblings.description === 'string' ? siblings.description : target.description;
        return { node: current, refStack: stack, cut: typeof description === 'string' ? { type, description } : { type } };
      }
      stack = [...stack, ref];
      current = { ...target, ...siblings };
    }
    return { node: current, refStack: stack };
  }

  /** A JSON pointer inside this schema (`#/$defs/Name`, `#/definitions/Name`, any `#/…`). */
  private lookup(ref: string): JsonObject | undefined {
    if (!ref.startsWith('#')) return undefined;
    let target: unknown = this.root;
    for (const raw of ref.slice(1).split('/').slice(1)) {
      const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
      if (!isObject(target)) return undefined;
      target = target[key];
    }
    return isObject(target) ? target : undefined;
  }

  /** `allOf` members folded into their parent: properties and required lists joined, other keywords overlaid. */
  private mergeAllOf(node: JsonObject, refStack: readonly string[]): JsonObject {
    if (!Array.isArray(node.allOf)) return node;
    const { allOf, ...rest } = node;
    let merged: JsonObject = {};
    for (const member of allOf as unknown[]) {
      if (!isObject(member)) continue;
      const resolved = this.resolveRef(member, refStack);
      const part = this.mergeAllOf(resolved.node, resolved.refStack);
      merged = mergeSchemas(merged, part);
    }
    return mergeSchemas(merged, rest);
  }
}

function mergeSchemas(base: JsonObject, overlay: JsonObject): JsonObject {
  const merged: JsonObject = { ...base, ...overlay };
  if (isObject(base.properties) && isObject(overlay.properties)) merged.properties = { ...base.properties, ...overlay.properties };
  if (Array.isArray(base.required) && Array.isArray(overlay.required)) merged.required = [...new Set([...base.required, ...overlay.required])];
  return merged;
}

function typeList(type: unknown): string[] {
  if (typeof type === 'string') return [type];
  if (Array.isArray(type)) return type.filter((entry): entry is string => typeof entry === 'string');
  return [];
}

function isNullSchema(node: unknown): boolean {
  return isObject(node) && node.type === 'null' && Object.keys(node).every((key) => key === 'type' || key === 'description');
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
