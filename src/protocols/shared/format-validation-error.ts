import type { z } from 'zod';
import { invalidRequest, type GatewayError } from '../../canonical/errors.js';

type Issue = z.core.$ZodIssue;

/** `messages[0].content[1].image_url.url`: the path as the client wrote its JSON. */
export function formatParamPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else out += out === '' ? String(segment) : `.${String(segment)}`;
  }
  return out;
}

/**
 * The first schema issue as a 400 naming the field, in words a client developer can act on.
 * Parse with `{ reportInput: true }` so type errors can say what was sent.
 */
export function validationError(error: z.ZodError): GatewayError {
  const { issue, path } = mostSpecific(error.issues[0]!, []);
  const param = formatParamPath(path);
  const where = param === '' ? 'the request body' : `'${param}'`;
  return invalidRequest(`Invalid value for ${where}: ${describeIssue(issue)}`, param === '' ? undefined : param);
}

/** A schema with the zod 4 `safeParse` signature, whatever its output type. */
export interface BodySchema<T> {
  safeParse(
    value: unknown,
    params: { reportInput: boolean },
  ): { success: true; data: T } | { success: false; error: z.ZodError };
}

/**
 * A request body checked against its schema: a JSON object, or the 400 saying so; then the schema's first issue
 * as a 400 naming the field. `prepare` rewrites the object before parsing (Gemini accepts snake_case names).
 */
export function parseRequestBody<T>(
  body: unknown,
  schema: BodySchema<T>,
  prepare: (object: Record<string, unknown>) => unknown = (object) => object,
): T {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw invalidRequest('The request body must be a JSON object.');
  const parsed = schema.safeParse(prepare(body as Record<string, unknown>), { reportInput: true });
  if (!parsed.success) throw validationError(parsed.error);
  return parsed.data;
}

/** For a union, the branch that got furthest explains the mistake best (e.g. a bad part inside a content array). */
function mostSpecific(issue: Issue, prefix: PropertyKey[]): { issue: Issue; path: PropertyKey[] } {
  const path = [...prefix, ...issue.path];
  if (issue.code !== 'invalid_union' || issue.discriminator !== undefined || issue.errors.length === 0)
    return { issue, path };
  let best: Issue | undefined;
  let bestScore = 0;
  for (const branch of issue.errors) {
    const first = branch[0];
    if (first === undefined) continue;
    // Deeper is better; at equal depth, a branch whose type matched (a constraint failed) explains more.
    const score = first.path.length * 2 + (first.code === 'invalid_type' ? 0 : 1);
    if (score > bestScore) {
      best = first;
      bestScore = score;
    }
  }
  if (best === undefined) return { issue, path };
  return mostSpecific(best, path);
}

function describeIssue(issue: Issue): string {
  switch (issue.code) {
    case 'invalid_type':
      return issue.input === undefined
        ? `this field is required (expected ${issue.expected}).`
        : `expected ${issue.expected}, got ${describeValue(issue.input)}.`;
    case 'too_small':
      return issue.origin === 'array' || issue.origin === 'string'
        ? `${issue.message}.`
        : `must be at least ${String(issue.minimum)}.`;
    case 'too_big':
      return issue.origin === 'array' || issue.origin === 'string'
        ? `${issue.message}.`
        : `must be at most ${String(issue.maximum)}.`;
    case 'invalid_union':
      if (issue.discriminator !== undefined) {
        const options = ('options' in issue ? (issue.options ?? []) : [])
          .map((option) => JSON.stringify(option))
          .join(', ');
        return `'${issue.discriminator}' must be one of ${options}, got ${JSON.stringify(discriminatorValue(issue))}.`;
      }
      return `expected ${[...new Set(issue.errors.map((branch) => (branch[0]?.code === 'invalid_type' ? branch[0].expected : 'another form')))].join(' or ')}${issue.input === undefined ? '' : `, got ${describeValue(issue.input)}`}.`;
    case 'invalid_value':
      return `must be one of ${issue.values.map((value) => JSON.stringify(value)).join(', ')}.`;
    default:
      return `${issue.message}.`;
  }
}

function discriminatorValue(issue: Extract<Issue, { code: 'invalid_union' }>): unknown {
  const input = issue.input;
  if (input === null || typeof input !== 'object' || issue.discriminator === undefined) return undefined;
  return (input as Record<string, unknown>)[issue.discriminator];
}

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}
