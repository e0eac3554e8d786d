import type { FastifyInstance } from 'fastify';
import type { z } from 'zod';
import { invalidJsonBody, invalidRequest } from '../../canonical/errors.js';
import { validationError } from '../../protocols/shared/format-validation-error.js';
import { shapeProblem } from '../json-body-parser.js';

/**
 * JSON bodies for the dashboard API, where an empty body counts as none: a browser `fetch` of an action with
 * nothing to send (logout, revoke) often still says `Content-Type: application/json`.
 */
export function acceptJsonOrEmpty(api: FastifyInstance): void {
  api.removeContentTypeParser('application/json');
  api.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') return done(null, undefined);
    try {
      const value: unknown = JSON.parse(text);
      // The same depth, key-length and prototype-key refusals as every other JSON body (src/http/json-body-parser.ts).
      const problem = shapeProblem(value);
      if (problem !== undefined) return done(problem, undefined);
      done(null, value);
    } catch {
      done(invalidJsonBody(), undefined);
    }
  });
}

/**
 * The value parsed by `schema`, or the 400 naming the first bad field. A schema's own message (a sentence ending
 * in a full stop, written for the person at the form: "Key names are at most 100 characters.") is shown as it is;
 * otherwise the generic description of the problem.
 */
export function parseInput<Schema extends z.ZodType>(schema: Schema, value: unknown): z.output<Schema> {
  const parsed = schema.safeParse(value ?? {}, { reportInput: true });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    if (issue !== undefined && /^[A-Z].*\.$/.test(issue.message)) {
      const field = issue.path.map(String).join('.');
      throw invalidRequest(issue.message, field === '' ? undefined : field);
    }
    throw validationError(parsed.error);
  }
  return parsed.data;
}
