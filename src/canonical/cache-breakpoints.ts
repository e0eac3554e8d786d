import type { CacheBreakpoint, CanonicalRequest } from './request.js';

/**
 * The block-level cache breakpoints of a request in the order Anthropic reads a prompt: tools, then system, then
 * messages (a tool result's inner blocks before the result itself). Anthropic's rules on breakpoints (how many,
 * which TTL may follow which) are stated in this order.
 */
export function cacheBreakpointsInOrder(request: CanonicalRequest): CacheBreakpoint[] {
  const out: CacheBreakpoint[] = [];
  for (const tool of request.tools ?? []) if (tool.cache !== undefined) out.push(tool.cache);
  for (const block of request.system) if (block.cache !== undefined) out.push(block.cache);
  for (const message of request.messages) {
    for (const block of message.content) {
      if (block.type === 'reasoning') continue;
      if (block.type === 'tool-result')
        for (const part of block.content) if (part.cache !== undefined) out.push(part.cache);
      if (block.cache !== undefined) out.push(block.cache);
    }
  }
  return out;
}

/** Whether the client asked for any caching at all: a breakpoint on a block or tool, or the top-level form. */
export function hasCacheBreakpoints(request: CanonicalRequest): boolean {
  return request.cache !== undefined || cacheBreakpointsInOrder(request).length > 0;
}

/** Whether the last block of the conversation already carries a breakpoint (where the top-level form would go). */
export function lastBlockHasBreakpoint(request: CanonicalRequest): boolean {
  const last = request.messages[request.messages.length - 1]?.content.at(-1);
  return last !== undefined && last.type !== 'reasoning' && last.cache !== undefined;
}
