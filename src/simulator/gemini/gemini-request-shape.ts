/**
 * Gemini parses request bodies as proto3 JSON: it accepts lowerCamelCase and snake_case field names, and
 * refuses any field it does not know — `Invalid JSON payload received. Unknown name "maxTokens" at
 * 'generation_config': Cannot find field.` — and list values on scalar fields (JSON Schema's
 * `"type": ["string", "null"]`). Those refusals are how OpenAI-shaped fields leaking into a Gemini request
 * fail against the real API, so the simulator parses the same way: `normalizeGeminiRequest` checks the
 * body against the message shapes below and returns it with every known field in camelCase.
 */

export class GeminiInvalid extends Error {}

type Json = Record<string, unknown>;

type Shape =
  | { kind: 'message'; type: string; fields: Record<string, Shape> }
  | { kind: 'list'; of: Shape }
  /** Free keys (a Schema's `properties`), each value of one shape. */
  | { kind: 'map'; of: Shape }
  | { kind: 'string' | 'bool' | 'float' | 'int' | 'bytes' }
  | { kind: 'enum'; type: string; values: readonly string[] }
  /** A google.protobuf.Struct: any JSON object (function args and responses). */
  | { kind: 'struct' }
  /** Any JSON value. */
  | { kind: 'any' };

const STRING: Shape = { kind: 'string' };
const BOOL: Shape = { kind: 'bool' };
const FLOAT: Shape = { kind: 'float' };
const INT: Shape = { kind: 'int' };
const BYTES: Shape = { kind: 'bytes' };
const STRUCT: Shape = { kind: 'struct' };
const ANY: Shape = { kind: 'any' };
const list = (of: Shape): Shape => ({ kind: 'list', of });
const message = (type: string, fields: Record<string, Shape>): Shape & { kind: 'message' } => ({
  kind: 'message',
  type,
  fields,
});
const PACKAGE = 'type.googleapis.com/google.ai.generativelanguage.v1beta';

/** Gemini's OpenAPI-subset Schema; JSON-Schema-only keywords ($ref, additionalProperties, const…) are unknown. */
const SCHEMA = message('Schema', {});
Object.assign(SCHEMA.fields, {
  type: {
    kind: 'enum',
    type: 'Type',
    values: ['TYPE_UNSPECIFIED', 'STRING', 'NUMBER', 'INTEGER', 'BOOLEAN', 'ARRAY', 'OBJECT', 'NULL'],
  },
  format: STRING,
  title: STRING,
  description: STRING,
  nullable: BOOL,
  enum: list(STRING),
  maxItems: INT,
  minItems: INT,
  properties: { kind: 'map', of: SCHEMA },
  required: list(STRING),
  minProperties: INT,
  maxProperties: INT,
  minLength: INT,
  maxLength: INT,
  pattern: STRING,
  example: ANY,
  anyOf: list(SCHEMA),
  propertyOrdering: list(STRING),
  default: ANY,
  items: SCHEMA,
  minimum: FLOAT,
  maximum: FLOAT,
});

const BLOB = message('Blob', { mimeType: STRING, data: BYTES });
const PART = message('Part', {
  text: STRING,
  thought: BOOL,
  thoughtSignature: BYTES,
  inlineData: BLOB,
  fileData: message('FileData', { mimeType: STRING, fileUri: STRING }),
  functionCall: message('FunctionCall', { id: STRING, name: STRING, args: STRUCT }),
  functionResponse: message('FunctionResponse', {
    id: STRING,
    name: STRING,
    response: STRUCT,
    willContinue: BOOL,
    scheduling: STRING,
    parts: list(message('FunctionResponsePart', { inlineData: BLOB })),
  }),
  executableCode: message('ExecutableCode', { language: STRING, code: STRING }),
  codeExecutionResult: message('CodeExecutionResult', { outcome: STRING, output: STRING }),
  videoMetadata: ANY,
  mediaResolution: ANY,
  partMetadata: STRUCT,
});
const CONTENT = message('Content', { role: STRING, parts: list(PART) });
const TOOL = message('Tool', {
  functionDeclarations: list(
    message('FunctionDeclaration', {
      name: STRING,
      description: STRING,
      parameters: SCHEMA,
      parametersJsonSchema: ANY,
      response: SCHEMA,
      responseJsonSchema: ANY,
      behavior: STRING,
    }),
  ),
  googleSearch: ANY,
  googleSearchRetrieval: ANY,
  codeExecution: ANY,
  urlContext: ANY,
  fileSearch: ANY,
  computerUse: ANY,
  googleMaps: ANY,
});
const GENERATION_CONFIG = message('GenerationConfig', {
  stopSequences: list(STRING),
  responseMimeType: STRING,
  responseSchema: SCHEMA,
  responseJsonSchema: ANY,
  responseModalities: list(STRING),
  candidateCount: INT,
  maxOutputTokens: INT,
  temperature: FLOAT,
  topP: FLOAT,
  topK: INT,
  seed: INT,
  presencePenalty: FLOAT,
  frequencyPenalty: FLOAT,
  responseLogprobs: BOOL,
  logprobs: INT,
  enableEnhancedCivicAnswers: BOOL,
  speechConfig: ANY,
  imageConfig: ANY,
  mediaResolution: STRING,
  thinkingConfig: message('ThinkingConfig', {
    includeThoughts: BOOL,
    thinkingBudget: INT,
    thinkingLevel: {
      kind: 'enum',
      type: 'ThinkingLevel',
      values: ['THINKING_LEVEL_UNSPECIFIED', 'MINIMAL', 'LOW', 'MEDIUM', 'HIGH'],
    },
  }),
});
const GENERATE_FIELDS = {
  contents: list(CONTENT),
  systemInstruction: CONTENT,
  tools: list(TOOL),
  toolConfig: message('ToolConfig', {
    functionCallingConfig: message('FunctionCallingConfig', {
      mode: {
        kind: 'enum',
        type: 'FunctionCallingConfig.Mode',
        values: ['MODE_UNSPECIFIED', 'AUTO', 'ANY', 'NONE', 'VALIDATED'],
      },
      allowedFunctionNames: list(STRING),
    }),
    retrievalConfig: ANY,
  }),
  safetySettings: list(message('SafetySetting', { category: STRING, threshold: STRING, method: STRING })),
  generationConfig: GENERATION_CONFIG,
  cachedContent: STRING,
  serviceTier: STRING,
};
const GENERATE_REQUEST = message('GenerateContentRequest', GENERATE_FIELDS);
const COUNT_REQUEST = message('CountTokensRequest', {
  contents: list(CONTENT),
  generateContentRequest: message('GenerateContentRequest', { model: STRING, ...GENERATE_FIELDS }),
});

const camelNames = new Map<string, string>();
const snakeNames = new Map<string, string>();
const SNAKE_SEGMENT = /_([a-z0-9])/g;
const CAMEL_HUMP = /[A-Z]/g;

/** Field-name conversions, cached: the set of names is small and fixed, so no regex runs per request twice. */
function camelOf(name: string): string {
  let camel = camelNames.get(name);
  if (camel === undefined) {
    camel = name.replace(SNAKE_SEGMENT, (_, letter: string) => letter.toUpperCase());
    if (camelNames.size < 10_000) camelNames.set(name, camel);
  }
  return camel;
}

export function snakeOf(name: string): string {
  let snake = snakeNames.get(name);
  if (snake === undefined) {
    snake = name.replace(CAMEL_HUMP, (letter) => `_${letter.toLowerCase()}`);
    if (snakeNames.size < 10_000) snakeNames.set(name, snake);
  }
  return snake;
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function invalidValue(path: string, type: string, value: unknown): never {
  throw new GeminiInvalid(`Invalid value at '${path}' (${type}), ${JSON.stringify(value) ?? 'undefined'}`);
}

function unknownName(name: string, parentPath: string, reason: string): never {
  throw new GeminiInvalid(
    `Invalid JSON payload received. Unknown name "${name}"${parentPath === '' ? '' : ` at '${parentPath}'`}: ${reason}`,
  );
}

const INTEGER_TEXT = /^-?\d+$/;
/** proto3 JSON bytes: standard or URL-safe base64, padding optional. */
const BYTES_TEXT = /^[A-Za-z0-9+/_-]*={0,2}$/;
const SCALAR_TYPES = {
  string: 'TYPE_STRING',
  bool: 'TYPE_BOOL',
  float: 'TYPE_FLOAT',
  int: 'TYPE_INT32',
  bytes: 'TYPE_BYTES',
} as const;

function normalize(value: unknown, shape: Shape, path: string, key: string, parentPath: string): unknown {
  if (Array.isArray(value) && shape.kind !== 'list' && shape.kind !== 'any') {
    unknownName(key, parentPath, 'Proto field is not repeating, cannot start list.');
  }
  switch (shape.kind) {
    case 'message': {
      if (!isObject(value)) invalidValue(path, `${PACKAGE}.${shape.type}`, value);
      const out: Json = {};
      for (const [name, item] of Object.entries(value)) {
        const camel = camelOf(name);
        const field = shape.fields[camel];
        if (field === undefined) unknownName(name, path, 'Cannot find field.');
        out[camel] = normalize(item, field, path === '' ? snakeOf(camel) : `${path}.${snakeOf(camel)}`, name, path);
      }
      return out;
    }
    case 'list':
      if (!Array.isArray(value))
        unknownName(
          key,
          parentPath,
          `Proto field is repeated, cannot start ${isObject(value) ? 'object' : 'a scalar'}.`,
        );
      return value.map((item, index) => normalize(item, shape.of, `${path}[${index}]`, key, parentPath));
    case 'map': {
      if (!isObject(value)) invalidValue(path, 'map', value);
      const out: Json = {};
      for (const [name, item] of Object.entries(value))
        out[name] = normalize(item, shape.of, `${path}[${JSON.stringify(name)}].value`, name, path);
      return out;
    }
    case 'enum': {
      const upper = typeof value === 'string' ? value.toUpperCase() : undefined;
      if (upper === undefined || !shape.values.includes(upper)) invalidValue(path, `${PACKAGE}.${shape.type}`, value);
      return upper;
    }
    case 'struct':
      if (!isObject(value)) invalidValue(path, 'type.googleapis.com/google.protobuf.Struct', value);
      return value;
    case 'any':
      return value;
    case 'int':
      // proto3 JSON takes integers as numbers or decimal strings.
      if (typeof value === 'string' && INTEGER_TEXT.test(value)) return Number(value);
      if (typeof value !== 'number' || !Number.isInteger(value)) invalidValue(path, SCALAR_TYPES.int, value);
      return value;
    case 'float':
      if (typeof value !== 'number' || !Number.isFinite(value)) invalidValue(path, SCALAR_TYPES.float, value);
      return value;
    case 'bool':
      if (typeof value !== 'boolean') invalidValue(path, SCALAR_TYPES.bool, value);
      return value;
    case 'bytes':
      if (typeof value !== 'string') invalidValue(path, SCALAR_TYPES.bytes, value);
      if (!BYTES_TEXT.test(value) || value.length % 4 === 1) {
        throw new GeminiInvalid(
          `Invalid value at '${path}' (TYPE_BYTES), Base64 decoding failed for "${value.length > 40 ? `${value.slice(0, 40)}...` : value}"`,
        );
      }
      return value;
    default:
      if (typeof value !== 'string') invalidValue(path, SCALAR_TYPES[shape.kind], value);
      return value;
  }
}

/** The body of generateContent / streamGenerateContent, field names in camelCase; throws `GeminiInvalid`. */
export function normalizeGeminiRequest(body: unknown): Json {
  return normalize(body, GENERATE_REQUEST, '', '', '') as Json;
}

/** The body of countTokens: `{contents}` or `{generateContentRequest: {model, contents, …}}`. */
export function normalizeCountTokensRequest(body: unknown): Json {
  return normalize(body, COUNT_REQUEST, '', '', '') as Json;
}
