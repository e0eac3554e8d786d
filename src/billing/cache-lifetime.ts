import type { CanonicalRequest } from '../canonical/request.js';

/**
 * Whether a request asks for any part of its prompt to be cached for an hour: a 1-hour breakpoint on a system block,
 * a message's block, a tool definition, or the request itself (Anthropic's automatic form). Such a request may be
 * billed at the 1-hour write price for every prompt token, so its hold is taken at that price.
 */
export function carriesOneHourBreakpoint(request: CanonicalRequest): boolean {
  if (request.cache?.ttl === '1h') return true;
  if (request.system.some((block) => block.cache?.ttl === '1h')) return true;
  if (request.tools?.some((tool) => tool.cache?.ttl === '1h') === true) return true;
  return request.messages.some((message) =>
    message.content.some((block) => 'cache' in block && block.cache?.ttl === '1h'),
  );
}
