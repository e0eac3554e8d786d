/**
 * Gemini's checks of tool declarations and the tool config: function names (a letter or `_` first, then
 * `a-zA-Z0-9_.:-`, at most 128), one of `parameters` / `parametersJsonSchema`, and the rules of its
 * OpenAPI-subset schemas that JSON Schema habits break (translation.md §5.1): `enum` only on strings,
 * `required` naming defined properties, OBJECT schemas with `properties` listing at least one.
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

function checkSchema(schema: Json, path: string): void {
  const type = schema['type'];
  const properties = schema['properties'];
  if (Array.isArray(schema['enum']) && type !== undefined && type !== 'STRING') fail(`${path}.enum`, 'only allowed for STRING type');
  if (isObject(properties)) {
    if (type === 'OBJECT' && Object.keys(properties).length === 0) fail(`${path}.properties`, 'should be non-empty for OBJECT type');
    for (const [name, property] of Object.entries(properties)) {
      if (isObject(property)) checkSchema(property, `${path}.properties[${JSON.stringify(name)}].value`);
    }
  }
  const required = schema['required'];
  if (Array.isArray(required)) {
    required.forEach((name, index) => {
      if (!isObject(properties) || !(String(name) in properties)) fail(`${path}.required[${index}]`, 'property is not defined');
    });
  }
  if (isObject(schema['items'])) checkSchema(schema['items'], `${path}.items`);
  const anyOf = schema['anyOf'];
  if (Array.isArray(anyOf)) anyOf.forEach((branch, index) => isObject(branch) && checkSchema(branch, `${path}.any_of[${index}]`));
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
    });
  });
  const calling = request.toolConfig?.functionCallingConfig;
  const allowed = calling?.allowedFunctionNames;
  if (allowed !== undefined && allowed.length > 0) {
    if (calling?.mode !== 'ANY' && calling?.mode !== 'VALIDATED') {
      fail('tool_config.function_calling_config.allowed_function_names', 'allowed_function_names should be set only when the function calling mode is ANY or VALIDATED.');
    }
    allowed.forEach((name, index) => {
      if (!names.includes(name)) fail(`tool_config.function_calling_config.allowed_function_names[${index}]`, `function '${name}' is not declared in tools`);
    });
  }
  return names;
}
