import { cacheBreakpointsInOrder } from '../canonical/cache-breakpoints.js';
import type { CanonicalRequest } from '../canonical/request.js';

/**
 * Whether a request asks for any part of its prompt to be cached for an hour: a 1-hour breakpoint on any block or
 * tool (those inside a tool result too), or on the request itself (Anthropic's automatic form). Such a request may
 * be billed at the 1-hour write price for every prompt token, so its hold is taken at that price.
 */
export function carriesOneHourBreakpoint(request: CanonicalRequest): boolean {
  return request.cache?.ttl === '1h' || cacheBreakpointsInOrder(request).some((breakpoint) => breakpoint.ttl === '1h');
}
