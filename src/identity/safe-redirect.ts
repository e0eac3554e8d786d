import { invalidRequest } from '../canonical/errors.js';

/**
 * Where a link may send the person after it worked: a path of this gateway only. `//host` and `/\host` are
 * read by browsers as another host, and a scheme (`https:`, `javascript:`) leaves the gateway, so all of those
 * are refused rather than cleaned up.
 */
export function safeRedirectPath(next: string | undefined, field = 'next'): string | undefined {
  if (next === undefined || next === '') return undefined;
  const bad =
    next.length > 500 ||
    !next.startsWith('/') ||
    next.startsWith('//') ||
    next.includes('\\') ||
    // Control characters and spaces are stripped by browsers before parsing, which can turn `/\t/host` into `//host`.
    /[\s\p{Cc}]/u.test(next);
  if (bad)
    throw invalidRequest(
      'The page to return to must be a path on this gateway (starting with a single "/"); other sites are not allowed.',
      field,
    );
  return next;
}
