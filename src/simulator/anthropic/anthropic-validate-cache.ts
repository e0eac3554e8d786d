/**
 * Anthropic's checks of `cache_control` breakpoints, with its paths and wording: the only type is `ephemeral`,
 * `ttl` is `5m` or `1h`, at most 4 breakpoints per request (the top-level automatic one included), and no 1-hour
 * breakpoint after a 5-minute one in the order the API reads them (tools, system, messages). A gateway that
 * forwards a breakpoint Anthropic would refuse fails here, in a test, instead of in production.
 */
import { fail, isObject, type Json } from './anthropic-validate-blocks.js';

const MAX_BREAKPOINTS = 4;
const TTLS = ['5m', '1h'];

/** One `cache_control` value; returns its ttl, or undefined when there is none at `path`. */
function checkOne(value: unknown, path: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isObject(value)) fail(`${path}: Input should be a valid dictionary`);
  const type = value['type'];
  if (type !== 'ephemeral')
    fail(
      `${path}: Input tag '${String(type)}' found using 'type' does not match any of the expected tags: 'ephemeral'`,
    );
  const ttl = value['ttl'];
  if (ttl === undefined || ttl === null) return '5m';
  if (typeof ttl !== 'string' || !TTLS.includes(ttl)) fail(`${path}.ephemeral.ttl: Input should be '5m' or '1h'`);
  return ttl;
}

function listOf(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/** Every breakpoint of the body in the API's order, with its path. */
function breakpoints(body: Json): Array<{ value: unknown; path: string }> {
  const found: Array<{ value: unknown; path: string }> = [];
  const blockAt = (block: unknown, path: string): void => {
    if (!isObject(block)) return;
    found.push({ value: block['cache_control'], path: `${path}.cache_control` });
    // Blocks inside a tool result carry breakpoints of their own.
    for (const [index, inner] of listOf(block['content']).entries()) blockAt(inner, `${path}.content.${index}`);
  };
  for (const [index, tool] of listOf(body['tools']).entries()) blockAt(tool, `tools.${index}`);
  for (const [index, block] of listOf(body['system']).entries()) blockAt(block, `system.${index}`);
  for (const [messageIndex, message] of listOf(body['messages']).entries()) {
    if (!isObject(message)) continue;
    for (const [index, block] of listOf(message['content']).entries())
      blockAt(block, `messages.${messageIndex}.content.${index}`);
  }
  found.push({ value: body['cache_control'], path: 'cache_control' });
  return found;
}

export function checkCacheControls(body: Json): void {
  let count = 0;
  let seenFiveMinutes = false;
  for (const { value, path } of breakpoints(body)) {
    const ttl = checkOne(value, path);
    if (ttl === undefined) continue;
    count++;
    if (ttl === '1h' && seenFiveMinutes)
      fail(
        "A ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. Note that blocks are processed in the following order: `tools`, `system`, `messages`.",
      );
    if (ttl === '5m') seenFiveMinutes = true;
  }
  if (count > MAX_BREAKPOINTS)
    fail(`A maximum of ${MAX_BREAKPOINTS} blocks with cache_control may be provided. Found ${count}.`);
}
