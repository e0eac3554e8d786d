import { createRequire } from 'node:module';
import type { errors as UndiciErrors, Pool as UndiciPool } from 'undici';

/*
 * undici's Pool and error classes without the rest of undici. Its index loads every dispatcher (agents, proxies,
 * HTTP/2, retry), the fetch, WebSocket, cache and mock layers: 110 modules and ~3.7 MB of heap, when the gateway
 * only calls Pool.request. These are undici's own files, resolved from the installed package, and the request API
 * is put on the Dispatcher prototype exactly as undici's index does. undici-pool.test.ts checks that they are the
 * very objects `import 'undici'` gives, so a release that moves them fails the tests rather than production.
 */
const requireUndici = createRequire(createRequire(import.meta.url).resolve('undici'));
const Dispatcher = requireUndici('./lib/dispatcher/dispatcher.js') as { prototype: object };
Object.assign(Dispatcher.prototype, requireUndici('./lib/api/index.js') as object);

export const Pool = requireUndici('./lib/dispatcher/pool.js') as typeof UndiciPool;
export type Pool = UndiciPool;
export const undiciErrors = requireUndici('./lib/core/errors.js') as typeof UndiciErrors;
