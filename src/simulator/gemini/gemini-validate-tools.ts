/**
 * Gemini's checks of tool declarations and the tool config: function names (a letter or `_` first, then
 * `a-zA-Z0-9_.:-`, at most 128), one of `parameters` / `parametersJsonSchema`, and the rules of its
 * OpenAPI-subset schemas that JSON Schema habits break (docs/protocols/translation.md#tool-definitions): `enum` only on
 * strings, `required` naming defined properties, OBJECT schemas with `properties` listing at least one, and no
 * JSON-Schema keywords the subset has no field for (`additionalProperties`, `$ref`, `const`, …: "Unknown name"). A JSON
 * Schema (`parametersJsonSchema`, `responseJsonSchema`) is taken as written, but not a `$schema` marker nor a `$ref`
 * the schema does not define, and function parameters must describe an object.
 */
import { GeminiInvalid, snakeOf } from './gemini-request-shape.js';
import type { GeminiRequest } from './gemini-types.js';

type Json = Record<string, unknown>;

const FUNCTION_NAME = /^[a-zA-Z_][a-zA-Z0-9_.:-]{0,127}$/;
const PREFIX = '* GenerateContentRequest';

function fail(path: string, problem: string): never {
  throw new GeminiInvalid(`${PREFIX}.${path}: ${problem}\n`);
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** JSON-Schema keywords with no field in the OpenAPI subset: the request is refused as an unknown name. */
const NOT_IN_SUBSET = [
  '$schema',
  '$ref',
  '$defs',
  'definitions',
  'additionalProperties',
  'const',
  'oneOf',
  'allOf',
  'not',
  'patternProperties',
];

function checkSchema(schema: Json, path: string): void {
  for (const key of NOT_IN_SUBSET) {
    if (key in schema)
      throw new GeminiInvalid(`Invalid JSON payload received. Unknown name "${key}" at '${path}': Cannot find field.`);
  }
  const type = schema['type'];
  const properties = schema['properties'];
  if (Array.isArray(schema['enum']) && type !== undefined && type !== 'STRING')
    fail(`${path}.enum`, 'only allowed for STRING type');
  if (isObject(properties)) {
    if (type === 'OBJECT' && Object.keys(properties).length === 0)
      fail(`${path}.properties`, 'should be non-empty for OBJECT type');
    for (const [name, property] of Object.entries(properties)) {
      if (isObject(property)) checkSchema(property, `${path}.properties[${JSON.stringify(name)}].value`);
    }
  }
  const required = schema['required'];
  if (Array.isArray(required)) {
    required.forEach((name, index) => {
      if (!isObject(properties) || !(String(name) in properties))
        fail(`${path}.required[${index}]`, 'property is not defined');
    });
  }
  if (isObject(schema['items'])) checkSchema(schema['items'], `${path}.items`);
  const anyOf = schema['anyOf'];
  if (Array.isArray(anyOf))
    anyOf.forEach((branch, index) => {
      if (isObject(branch)) checkSchema(branch, `${path}.any_of[${index}]`);
    });
}

/** A JSON Schema field: no `$schema` marker anywhere, every `$ref` pointing into the schema itself. */
export function checkJsonSchema(schema: unknown, path: string, root: unknown = schema): void {
  if (Array.isArray(schema)) {
    schema.forEach((item, index) => {
      checkJsonSchema(item, `${path}[${index}]`, root);
    });
    return;
  }
  if (!isObject(schema)) return;
  for (const [key, value] of Object.entries(schema)) {
    if (key === '$schema') fail(`${path}`, 'the $schema keyword is not supported');
    if (key === '$ref' && (typeof value !== 'string' || !resolves(root, value)))
      fail(`${path}.$ref`, `reference ${JSON.stringify(value)} could not be resolved`);
    if (key === 'enum' || key === 'const' || key === 'default' || key === 'examples' || key === 'required') continue;
    if ((key === 'properties' || key === '$defs' || key === 'definitions') && isObject(value)) {
      for (const [name, child] of Object.entries(value))
        checkJsonSchema(child, `${path}.${key}[${JSON.stringify(name)}]`, root);
    } else checkJsonSchema(value, `${path}.${key}`, root);
  }
}

function resolves(root: unknown, ref: string): boolean {
  if (!ref.startsWith('#')) return false;
  let target: unknown = root;
  for (const raw of ref.slice(1).split('/').slice(1)) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isObject(target) || !Object.hasOwn(target, key)) return false;
    target = target[key];
  }
  return isObject(target);
}

/** Checks declarations and tool config; returns the declared function names. */
export function checkTools(request: GeminiRequest): string[] {
  const names: string[] = [];
  (request.tools ?? []).forEach((tool, toolIndex) => {
    (tool.functionDeclarations ?? []).forEach((declaration, index) => {
      const path = `tools[${toolIndex}].function_declarations[${index}]`;
      const name = declaration.name ?? '';
      if (!FUNCTION_NAME.test(name)) {
        fail(
          `${path}.name`,
          'Invalid function name. Must start with a letter or an underscore. Must be a-z, A-Z, 0-9, or contain underscores, dots, colons and dashes, with a maximum length of 128.',
        );
      }
      if (names.includes(name)) fail(`${path}.name`, `Duplicate function declaration found: ${name}`);
      names.push(name);
      if (declaration.parameters !== undefined && declaration.parametersJsonSchema !== undefined) {
        fail(`${path}.parameters`, `${snakeOf('parametersJsonSchema')} and parameters are mutually exclusive`);
      }
      if (declaration.parameters !== undefined) checkSchema(declaration.parameters, `${path}.parameters`);
      const jsonSchema = declaration.parametersJsonSchema;
      if (jsonSchema !== undefined) {
        if (!isObject(jsonSchema) || jsonSchema['type'] !== 'object')
          fail(`${path}.parameters_json_schema`, 'the schema of function parameters must be of type object');
        checkJsonSchema(jsonSchema, `${path}.parameters_json_schema`);
      }
    });
  });
  const calling = request.toolConfig?.functionCallingConfig;
  const allowed = calling?.allowedFunctionNames;
  if (allowed !== undefined && allowed.length > 0) {
    if (calling?.mode !== 'ANY' && calling?.mode !== 'VALIDATED') {
      fail(
        'tool_config.function_calling_config.allowed_function_names',
        'allowed_function_names should be set only when the function calling mode is ANY or VALIDATED.',
      );
    }
    allowed.forEach((name, index) => {
      if (!names.includes(name))
        fail(
          `tool_config.function_calling_config.allowed_function_names[${index}]`,
          `function '${name}' is not declared in tools`,
        );
    });
  }
  return names;
}
