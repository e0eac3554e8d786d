import type { onRequestHookHandler, RouteOptions } from 'fastify';

/**
 * Adds an `onRequest` hook to one route from an `onRoute` hook, after the route's own. A hook attached per route
 * knows the route's config and pattern when it is made, so it need not read `request.routeOptions` (a fresh
 * object on every read) on each request. Always a new array: fastify clones a GET route's options for its HEAD
 * twin before the `onRoute` hooks run, and a shared array would get the hook twice.
 */
export function appendOnRequestHook(route: RouteOptions, hook: onRequestHookHandler): void {
  const existing = route.onRequest;
  if (existing === undefined) route.onRequest = [hook];
  else
    route.onRequest = Array.isArray(existing)
      ? [...(existing as onRequestHookHandler[]), hook]
      : [existing as onRequestHookHandler, hook];
}
