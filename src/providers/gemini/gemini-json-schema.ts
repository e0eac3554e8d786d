/**
 * JSON Schema (what OpenAI and Anthropic clients send) as Gemini's JSON-Schema fields take it:
 * `FunctionDeclaration.parametersJsonSchema` and `generationConfig.responseJsonSchema`
 * (docs/protocols/wire-gemini.md#parts-and-function-calling, #generation-config). These take the schema as written, so
 * nothing a client said about its arguments or its output is lost in a translation to Gemini's older OpenAPI subset
 * (`parameters` / `responseSchema`). Two things the endpoint refuses whichever field carries the schema are handled
 * here:
 * - `$schema` (the dialect marker tools generated from zod or pydantic carry) is removed, wherever it appears;
 * - `$ref` to `#/…` (`$defs`, `definitions`) is inlined, with the sibling keywords overriding the target's, and the
 *   definitions left out; a recursive reference is cut to a bare `{type}`.
 * Values that are data, not schemas (`enum`, `const`, `default`, `examples`), are copied untouched, and so are the
 * names of `properties`.
 */

export type JsonSchema = Record<string, unknown>;

/** Longest chain of nested `$ref`s followed before a reference counts as recursive. */
const MAX_REF_DEPTH = 32;
/** Keywords whose value is a map of name → schema. */
const SCHEMA_MAPS: ReadonlySet<string> = new Set(['properties', 'patternProperties', 'dependentSchemas']);
/** Keywords whose value is data, never walked. */
const DATA_KEYWORDS: ReadonlySet<string> = new Set(['enum', 'const', 'default', 'examples', 'example', 'required']);
/** Keywords left out of the sent schema. */
const DROPPED_KEYWORDS: ReadonlySet<string> = new Set(['$schema', '$defs', 'definitions']);

export function toGeminiJsonSchema(schema: JsonSchema): JsonSchema {
  return new JsonSchemaInliner(schema).schema(schema, []);
}

class JsonSchemaInliner {
  constructor(private readonly root: JsonSchema) {}

  /** `refStack`: the `$ref`s being expanded above this node, to cut recursion. */
  schema(node: JsonSchema, refStack: readonly string[]): JsonSchema {
    let current = node;
    let stack = refStack;
    while (typeof current.$ref === 'string') {
      const ref = current.$ref;
      const { $ref: _followed, ...siblings } = current;
      const target = this.lookup(ref);
      if (target === undefined) {
        current = siblings;
        break;
      }
      if (stack.includes(ref) || stack.length >= MAX_REF_DEPTH) {
        const type = typeof target.type === 'string' ? target.type : 'object';
        const description = siblings.description ?? target.description;
        return typeof description === 'string' ? { type, description } : { type };
      }
      stack = [...stack, ref];
      current = { ...target, ...siblings };
    }
    const out: JsonSchema = {};
    for (const [key, value] of Object.entries(current)) {
      if (DROPPED_KEYWORDS.has(key)) continue;
      if (DATA_KEYWORDS.has(key)) out[key] = value;
      else if (SCHEMA_MAPS.has(key) && isObject(value)) {
        // fromEntries defines own properties, so a property named `__proto__` stays a property.
        out[key] = Object.fromEntries(Object.entries(value).map(([name, child]) => [name, this.value(child, stack)]));
      } else out[key] = this.value(value, stack);
    }
    return out;
  }

  private value(value: unknown, stack: readonly string[]): unknown {
    if (Array.isArray(value)) return value.map((item) => this.value(item, stack));
    return isObject(value) ? this.schema(value, stack) : value;
  }

  /** A JSON pointer inside this schema (`#/$defs/Name`, `#/definitions/Name`, any `#/…`). */
  private lookup(ref: string): JsonSchema | undefined {
    if (!ref.startsWith('#')) return undefined;
    let target: unknown = this.root;
    for (const raw of ref.slice(1).split('/').slice(1)) {
      const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
      if (!isObject(target) || !Object.hasOwn(target, key)) return undefined;
      target = target[key];
    }
    return isObject(target) ? target : undefined;
  }
}

function isObject(value: unknown): value is JsonSchema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
