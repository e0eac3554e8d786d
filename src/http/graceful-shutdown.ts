import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { GatewayError } from '../canonical/errors.js';
import type { Abortable, InFlightAborts } from '../protocols/shared/exchange-abort.js';
import { requestProtocol } from './request-context.js';
import { sendError } from './render-error.js';

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * In-flight exchanges' controllers, aborted with `shutting_down` when a shutdown's grace period is over:
     * upstream calls stop and streams end with an error. Undecorated without a ShutdownState.
     */
    inFlightAborts: InFlightAborts;
  }
}

/**
 * What a graceful shutdown needs to know: whether the gateway is closing (new requests get 503), how many
 * requests are still being handled (a chat handler returns only after its request settled, whichever way it
 * ended, and its response is then sent), and a signal that cuts the stragglers once the grace period is over.
 */
export class ShutdownState {
  private readonly cut = new AbortController();
  private running = 0;
  private closingSince: number | undefined;
  private readonly drainWaiters = new Set<() => void>();
  /**
   * In-flight exchanges' controllers: a Set rather than one listener each on `signal`, since EventTarget's
   * addEventListener and removeEventListener per request were ~0.6% of a JSON request's CPU at concurrency 16.
   */
  private readonly controllers = new Set<Abortable>();
  readonly inFlightAborts: InFlightAborts = {
    add: (controller) => {
      if (this.cut.signal.aborted) controller.abort(this.cut.signal.reason);
      else this.controllers.add(controller);
    },
    delete: (controller) => {
      this.controllers.delete(controller);
    },
  };

  /** Aborted when the grace period is over (every registered exchange is aborted with the same reason). */
  get signal(): AbortSignal {
    return this.cut.signal;
  }

  get closing(): boolean {
    return this.closingSince !== undefined;
  }

  get inFlight(): number {
    return this.running;
  }

  /** Marks one handler as running; the returned function (idempotent) marks it done. */
  begin(): () => void {
    this.running += 1;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.running -= 1;
      if (this.running === 0) for (const wake of [...this.drainWaiters]) wake();
    };
  }

  startClosing(): void {
    this.closingSince ??= Date.now();
  }

  /** Ends the grace period: every in-flight exchange is aborted with `shutting_down`. */
  cutInFlight(): void {
    this.cut.abort(
      new GatewayError('shutting_down', 'The gateway is shutting down; the reply was cut short. Please retry.'),
    );
    const reason: unknown = this.cut.signal.reason;
    for (const controller of [...this.controllers]) controller.abort(reason);
    this.controllers.clear();
  }

  /** Resolves true once no handler runs, or false when `timeoutMs` passes first. */
  whenDrained(timeoutMs: number): Promise<boolean> {
    if (this.running === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.drainWaiters.delete(wake);
        resolve(this.running === 0);
      };
      const timer = setTimeout(wake, timeoutMs);
      this.drainWaiters.add(wake);
    });
  }
}

/**
 * Registers the shutdown behaviour on the root app (before any route): every route handler is counted while it
 * runs, and requests arriving while the gateway closes get a 503 in their route's error shape with
 * `connection: close`, so keep-alive clients move to another instance.
 */
export function registerShutdownHandling(app: FastifyInstance, state: ShutdownState): void {
  app.decorate('inFlightAborts', state.inFlightAborts);
  app.addHook('onRoute', (route: RouteOptions) => {
    const handler = route.handler;
    // Plain function and callbacks rather than an async wrapper and a promise per request: this runs on every
    // request, and each await is a microtask hop.
    route.handler = function trackedHandler(this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
      const end = state.begin();
      // Done when both are over: the response went out (fastify sends after the handler returns) and the
      // handler returned (a chat handler settles after a client that hung up has already closed the response).
      let open = 2;
      const release = () => {
        if (--open === 0) end();
      };
      const response = reply.raw;
      let responseOpen = true;
      const responseClosed = () => {
        if (!responseOpen) return;
        responseOpen = false;
        queuedOn?.off('close', responseClosed);
        release();
      };
      // A pipelined response queued behind an earlier one on its connection has no socket yet, and Node never
      // closes it when the connection closes first: that request is done when its connection closes.
      let queuedOn: NodeJS.Socket | undefined;
      if (response.destroyed) responseClosed();
      else {
        response.on('close', responseClosed);
        if (response.socket === null) {
          queuedOn = request.raw.socket;
          queuedOn.once('close', responseClosed);
        }
      }
      let result: unknown;
      try {
        result = handler.call(this, request, reply);
      } catch (error) {
        release();
        return Promise.reject(error);
      }
      // Always a promise, as the async wrapper returned before: fastify treats a promise's result the same way.
      return Promise.resolve(result).then(
        (value) => {
          release();
          return value;
        },
        (error: unknown) => {
          release();
          throw error;
        },
      );
    };
  });
  app.addHook('onRequest', createRefuseWhileClosingHook(state));
}

function createRefuseWhileClosingHook(state: ShutdownState) {
  // Callback style: no promise per request for a check that is false until the gateway closes.
  return function refuseWhileClosing(request: FastifyRequest, reply: FastifyReply, done: () => void): void {
    if (!state.closing) {
      done();
      return;
    }
    reply.header('connection', 'close');
    const error = new GatewayError(
      'shutting_down',
      'The gateway is shutting down. Please retry; another instance will answer.',
      { retryAfterSeconds: 1 },
    );
    // Answered here: fastify runs no further hook or handler for a reply sent by an onRequest hook.
    sendError(reply, error, requestProtocol(request));
  };
}

export interface DrainOptions {
  graceMs: number;
  /** After the grace period, how long cut requests get to settle before their connections are dropped. */
  settleMs?: number;
  log?: (message: string, details: Record<string, unknown>) => void;
}

/**
 * Closes the app gracefully: stops accepting connections at once, waits up to `graceMs` for in-flight
 * requests and streams, then cuts the rest (each still settles and ends with a well-formed error), and finally
 * drops the idle keep-alive connections so `app.close()` can resolve.
 */
export async function drainAndClose(app: FastifyInstance, state: ShutdownState, options: DrainOptions): Promise<void> {
  state.startClosing();
  const closed = app.close();
  const inFlight = state.inFlight;
  if (inFlight > 0) options.log?.('draining in-flight requests', { inFlight, graceMs: options.graceMs });
  if (!(await state.whenDrained(options.graceMs))) {
    options.log?.('grace period over: cutting in-flight requests', { inFlight: state.inFlight });
    state.cutInFlight();
    await state.whenDrained(options.settleMs ?? 10_000);
  }
  // Every handler is done; what is left are idle keep-alive sockets (or a client that stopped reading).
  app.server.closeAllConnections();
  await closed;
}
