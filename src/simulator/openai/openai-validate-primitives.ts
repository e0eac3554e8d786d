/**
 * The building blocks of OpenAI-style request validation (shared with DeepSeek, which speaks the same
 * dialect): OpenAI's message wording for wrong types, missing fields and out-of-range values, with the
 * `param` and `code` it reports. A check throws `Invalid`; the validator turns the first one into a 400.
 */

/** What OpenAI reports for a refused request (its `type` is always `invalid_request_error`). */
export interface OpenAiValidationError {
  message: string;
  param: string | null;
  code: string | null;
}

export class Invalid extends Error {
  constructor(readonly detail: OpenAiValidationError) {
    super(detail.message);
  }
}

export type Json = Record<string, unknown>;

export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'an integer' : 'a decimal';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}

export function fail(message: string, param: string | null, code: string | null): never {
  throw new Invalid({ message, param, code });
}

export function invalidType(param: string, expected: string, value: unknown): never {
  fail(`Invalid type for '${param}': expected ${expected}, but got ${typeName(value)} instead.`, param, 'invalid_type');
}

export function missing(param: string): never {
  fail(`Missing required parameter: '${param}'.`, param, 'missing_required_parameter');
}

export function invalidValue(param: string, value: unknown, supported: readonly string[]): never {
  const list = supported.map((item) => `'${item}'`);
  const joined = list.length > 1 ? `${list.slice(0, -1).join(', ')}, and ${list.at(-1)}` : (list[0] ?? '');
  fail(`Invalid value: '${String(value)}'. Supported values are: ${joined}.`, param, 'invalid_value');
}

function checkRange(param: string, value: number, min: number, max: number, kind: 'decimal' | 'integer'): void {
  if (value < min)
    fail(
      `Invalid '${param}': ${kind} below minimum value. Expected a value >= ${min}, but got ${value} instead.`,
      param,
      `${kind}_below_min_value`,
    );
  if (value > max)
    fail(
      `Invalid '${param}': ${kind} above maximum value. Expected a value <= ${max}, but got ${value} instead.`,
      param,
      `${kind}_above_max_value`,
    );
}

export function checkDecimal(body: Json, key: string, min: number, max: number): void {
  const value = body[key];
  if (value === undefined || value === null) return;
  if (typeof value !== 'number' || !Number.isFinite(value)) invalidType(key, 'a decimal', value);
  checkRange(key, value, min, max, 'decimal');
}

export function checkInteger(body: Json, key: string, min: number, max = Number.MAX_SAFE_INTEGER): void {
  const value = body[key];
  if (value === undefined || value === null) return;
  if (typeof value !== 'number' || !Number.isInteger(value)) invalidType(key, 'an integer', value);
  checkRange(key, value, min, max, 'integer');
}

export function checkBoolean(body: Json, key: string): void {
  const value = body[key];
  if (value !== undefined && value !== null && typeof value !== 'boolean') invalidType(key, 'a boolean', value);
}

export function requireString(holder: Json, key: string, param: string): void {
  const value = holder[key];
  if (value === undefined) missing(param);
  if (typeof value !== 'string') invalidType(param, 'a string', value);
}

export function requireObject(holder: Json, key: string, param: string): Json {
  const value = holder[key];
  if (value === undefined) missing(param);
  if (!isObject(value)) invalidType(param, 'an object', value);
  return value;
}
