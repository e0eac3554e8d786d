import type { FastifyInstance } from 'fastify';
import { rememberBodyBytes } from '../canonical/client-json-body.js';
import { GatewayError, invalidJsonBody, invalidRequest } from '../canonical/errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Actions that take no body (revoke, rotate): a `Content-Type: application/json` with no body (what many HTTP
     * clients send for any call) is no body, not invalid JSON. Other routes answer 400 to an empty body.
     */
    acceptsEmptyBody?: boolean;
  }
}

/**
 * Shape limits every JSON body must meet before any handler sees it (the size limit is fastify's `bodyLimit`).
 * Deep nesting would make recursive code downstream (serialisers, schema walkers, the tokenizer's message
 * flattening) overflow the stack; huge keys only cost memory. Real chat requests stay far below both.
 */
export const JSON_LIMITS = {
  /** Objects and arrays inside one another; tool schemas are the deepest legitimate part, a handful of levels. */
  maxDepth: 64,
  /** One object key, in UTF-16 units. */
  maxKeyLength: 1_024,
  /** Top-level `model`: catalog ids are short; a long value would only be echoed back in the error. */
  maxModelLength: 256,
} as const;

/**
 * Replaces fastify's JSON parser with the same refusals (`__proto__` and `constructor.prototype` keys are refused,
 * not stripped) followed by the shape check above, so an over-deep body gets a 400 in the caller's error shape like
 * any other invalid body. An empty body is a 400 saying so, except on `acceptsEmptyBody` routes.
 *
 * A short, shallow body goes through fastify's secure parser, which scans the text for the two keys with a regular
 * expression each, and only walks the parsed value when one matches. Any other body is walked anyway for its
 * shape, so it is parsed plainly and the walk refuses the keys: the two scans were 2.4% of the gateway's CPU on
 * 256 KB prompts.
 */
export function registerJsonBodyParser(app: FastifyInstance): void {
  const parseSecurely = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  // Read as bytes (fastify decodes a string from the same joined buffer): a large body's bytes are kept for a
  // same-format vendor body to reuse (client-json-body.ts).
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, function parseLimitedJson(request, body, done) {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') {
      // Read only here: `routeOptions` builds a new object on every read.
      if (request.routeOptions.config?.acceptsEmptyBody === true) done(null, undefined);
      else done(new GatewayError('invalid_json', 'The request body is empty: send a JSON object.'), undefined);
      return;
    }
    if (!textMayBreakShape(text)) {
      parseSecurely(request, text, (error: Error | null, value?: unknown) => {
        if (error !== null) done(error, undefined);
        else accepted(body, value, modelProblem(value), done);
      });
      return;
    }
    const value = parsedOrUndefined(text);
    if (value === undefined) done(invalidJsonBody(), undefined);
    else accepted(body, value, shapeProblem(value), done);
  });
}

/** Hands fastify the parsed body, or the problem found in it; the bytes of an accepted body are kept for reuse. */
function accepted(
  body: Buffer | string,
  value: unknown,
  problem: GatewayError | undefined,
  done: (error: Error | null, value: unknown) => void,
): void {
  if (problem !== undefined) {
    done(problem, undefined);
    return;
  }
  if (typeof body !== 'string') rememberBodyBytes(value, body);
  done(null, value);
}

/** JSON.parse as the secure parser does it (a byte-order mark skipped); undefined for invalid JSON (JSON has no undefined). */
function parsedOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text) as unknown;
  } catch {
    return undefined;
  }
}

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;

/**
 * Whether the walk of `shapeProblem` is needed at all, decided from the source text, which is cheaper for the
 * usual small body than walking the parsed value. A key of more than `maxKeyLength` UTF-16 units needs at least
 * that many characters of source (escapes only make the source longer); `maxDepth` levels need that many `{`
 * or `[` characters (counting those inside strings too only errs towards walking). So a short body with few
 * openers cannot break either limit; anything else is walked.
 */
export function textMayBreakShape(text: string): boolean {
  if (text.length > JSON_LIMITS.maxKeyLength) return true;
  let openers = 0;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if ((code === OPEN_BRACE || code === OPEN_BRACKET) && ++openers >= JSON_LIMITS.maxDepth) return true;
  }
  return false;
}

/** The top-level `model` limit alone: checked on every body (cheap), whether or not the walk is needed. */
function modelProblem(value: unknown): GatewayError | undefined {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const model = (value as Record<string, unknown>).model;
    if (typeof model === 'string' && model.length > JSON_LIMITS.maxModelLength) {
      return invalidRequest(
        `Invalid value for 'model': longer than ${JSON_LIMITS.maxModelLength} characters.`,
        'model',
      );
    }
  }
  return undefined;
}

/**
 * The first limit a parsed JSON value breaks, or the first key the secure parser refuses (`__proto__`, or
 * `constructor` holding an object with its own `prototype`), as a 400; undefined when there is none. Iterative: no
 * recursion to overflow.
 */
export function shapeProblem(value: unknown): GatewayError | undefined {
  const model = modelProblem(value);
  if (model !== undefined) return model;
  // Two parallel stacks instead of one object per pushed value: no allocation per node on large bodies.
  const values: object[] = [];
  const depths: number[] = [];
  if (value !== null && typeof value === 'object') {
    values.push(value);
    depths.push(0);
  }
  while (values.length > 0) {
    const current = values.pop()!;
    const depth = depths.pop()!;
    if (depth >= JSON_LIMITS.maxDepth) {
      return invalidRequest(`The request body nests objects and arrays deeper than ${JSON_LIMITS.maxDepth} levels.`);
    }
    if (Array.isArray(current)) {
      for (let index = 0; index < current.length; index++) {
        const item: unknown = current[index];
        if (item !== null && typeof item === 'object') {
          values.push(item);
          depths.push(depth + 1);
        }
      }
      continue;
    }
    for (const key of Object.keys(current)) {
      if (key.length > JSON_LIMITS.maxKeyLength) {
        return invalidRequest(`The request body has an object key longer than ${JSON_LIMITS.maxKeyLength} characters.`);
      }
      const item: unknown = (current as Record<string, unknown>)[key];
      if (
        key === '__proto__' ||
        (key === 'constructor' && item !== null && typeof item === 'object' && Object.hasOwn(item, 'prototype'))
      ) {
        return invalidJsonBody();
      }
      if (item !== null && typeof item === 'object') {
        values.push(item);
        depths.push(depth + 1);
      }
    }
  }
  return undefined;
}
