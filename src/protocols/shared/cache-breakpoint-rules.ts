import { cacheBreakpointsInOrder, lastBlockHasBreakpoint } from '../../canonical/cache-breakpoints.js';
import { invalidRequest } from '../../canonical/errors.js';
import type { CacheBreakpoint, CanonicalRequest } from '../../canonical/request.js';

/** Anthropic's limit of breakpoints per request, the top-level (automatic) one included. */
export const MAX_CACHE_BREAKPOINTS = 4;

/** A `cache_control` value as the client wrote it, once its schema has checked `type` and `ttl`. */
export type WireCacheControl = { type: 'ephemeral'; ttl?: '5m' | '1h' | undefined } | null | undefined;

/**
 * The breakpoints of one request as they are decoded, each remembered with its path in the caller's body, so the
 * rules checked on the whole request (`check`) can name the field at fault.
 */
export class CacheBreakpointPaths {
  private readonly paths = new Map<CacheBreakpoint, string>();

  /**
   * `keepExtras`: an Anthropic client's other members of the `cache_control` (beta fields such as `scope`) that
   * only an Anthropic upstream reads. Same protocol, so they travel as sent.
   */
  constructor(private readonly keepExtras = false) {}

  /** The canonical breakpoint of a `cache_control` at `param` (a missing ttl means 5 minutes), or undefined. */
  take(control: WireCacheControl, param: string): CacheBreakpoint | undefined {
    if (control === undefined || control === null) return undefined;
    const breakpoint: CacheBreakpoint = { ttl: control.ttl ?? '5m' };
    if (this.keepExtras) {
      const { type: _type, ttl: _ttl, ...extras } = control as Record<string, unknown>;
      if (Object.keys(extras).length > 0) breakpoint.anthropicFields = extras;
    }
    this.paths.set(breakpoint, param);
    return breakpoint;
  }

  /**
   * Anthropic's rules, checked before anything is held or sent (a 400 naming the field): at most four breakpoints,
   * the top-level one counted unless the last block already carries one (it would land there), and no 1-hour
   * breakpoint after a 5-minute one, in the order tools, system, messages (the top-level one is last).
   */
  check(request: CanonicalRequest, topLevelParam = 'cache_control'): void {
    const placed = cacheBreakpointsInOrder(request).map((breakpoint) => ({
      ttl: breakpoint.ttl,
      param: this.paths.get(breakpoint) ?? topLevelParam,
    }));
    if (request.cache !== undefined && !lastBlockHasBreakpoint(request))
      placed.push({ ttl: request.cache.ttl, param: topLevelParam });
    if (placed.length > MAX_CACHE_BREAKPOINTS) {
      throw invalidRequest(
        `A request may carry at most ${MAX_CACHE_BREAKPOINTS} cache breakpoints ('cache_control'), the top-level one included; found ${placed.length}. '${placed[MAX_CACHE_BREAKPOINTS]!.param}' is one too many.`,
        placed[MAX_CACHE_BREAKPOINTS]!.param,
      );
    }
    let fiveMinutes: string | undefined;
    for (const { ttl, param } of placed) {
      if (ttl === '5m') fiveMinutes ??= param;
      else if (fiveMinutes !== undefined) {
        throw invalidRequest(
          `'${param}' has ttl "1h" but comes after the 5-minute breakpoint '${fiveMinutes}': 1-hour breakpoints must come before 5-minute ones, in the order tools, system, messages.`,
          param,
        );
      }
    }
  }
}
