import type { FastifyInstance } from 'fastify';
import { invalidRequest, type GatewayError } from '../canonical/errors.js';

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
 * Replaces fastify's JSON parser with the same secure parser (`__proto__` and `constructor.prototype` keys are
 * refused, not stripped) followed by the shape check above, so an over-deep body gets a 400 in the caller's
 * error shape like any other invalid body.
 */
export function registerJsonBodyParser(app: FastifyInstance): void {
  const parseSecurely = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, function parseLimitedJson(request, body, done) {
    parseSecurely(request, typeof body === 'string' ? body : body.toString('utf8'), (error: Error | null, value?: unknown) => {
      if (error !== null) {
        done(error, undefined);
        return;
      }
      const problem = shapeProblem(value);
      if (problem === undefined) done(null, value);
      else done(problem, undefined);
    });
  });
}

/** The first limit a parsed JSON value breaks, as a 400; undefined when it meets them all. Iterative: no recursion to overflow. */
export function shapeProblem(value: unknown): GatewayError | undefined {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const model = (value as Record<string, unknown>).model;
    if (typeof model === 'string' && model.length > JSON_LIMITS.maxModelLength) {
      return invalidRequest(`Invalid value for 'model': longer than ${JSON_LIMITS.maxModelLength} characters.`, 'model');
    }
  }
  const stack: Array<{ value: unknown; depth: number }> = [{ value, depth: 0 }];
  while (stack.length > 0) {
    const { value: current, depth } = stack.pop()!;
    if (current === null || typeof current !== 'object') continue;
    if (depth >= JSON_LIMITS.maxDepth) {
      return invalidRequest(`The request body nests objects and arrays deeper than ${JSON_LIMITS.maxDepth} levels.`);
    }
    if (Array.isArray(current)) {
      for (const item of current) if (item !== null && typeof item === 'object') stack.push({ value: item, depth: depth + 1 });
      continue;
    }
    for (const [key, item] of Object.entries(current)) {
      if (key.length > JSON_LIMITS.maxKeyLength) {
        return invalidRequest(`The request body has an object key longer than ${JSON_LIMITS.maxKeyLength} characters.`);
      }
      if (item !== null && typeof item === 'object') stack.push({ value: item, depth: depth + 1 });
    }
  }
  return undefined;
}
