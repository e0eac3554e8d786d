import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * How many HTTP requests this process is handling, from the request's arrival (fastify's first onRequest hook,
 * run synchronously from the server's `request` event) to its response's `close`. SQLite's hot path asks it
 * whether any request but the writer's own is in flight: with none, a write has nothing to share a commit with
 * and commits without waiting for the event loop's check phase (sqlite-hot-path.ts).
 *
 * Counted from arrival, not from the hold: a request still being read, authenticated or rate-limited is about
 * to write too, and a count that left it out (the fourth pass's set of held requests) was empty now and then
 * under load, so some commits went alone instead of joining the turn's group commit (+4-10% CPU at c16).
 *
 * Each request is counted down exactly once: Node emits a response's `close` once (it is guarded by its own
 * flag), whether the response finished, the client hung up (the socket's `close`), or the handler failed and
 * fastify answered with an error. The one response Node never closes is a pipelined one still queued behind
 * another when the connection goes; for that rare case the socket's `close` counts it down instead.
 */
export class RequestsInFlight {
  private count = 0;
  /** Shared by every response: no closure per request. */
  private readonly ended = (): void => {
    this.count -= 1;
  };

  /** Whether a request other than the caller's is in flight (the caller being one of the counted, or none). */
  readonly othersInFlight = (): boolean => this.count > 1;

  get inFlight(): number {
    return this.count;
  }

  /** Counts a request that has just arrived, until its response closes. */
  track(request: IncomingMessage, response: ServerResponse): void {
    this.count += 1;
    if (response.socket !== null) {
      response.on('close', this.ended);
      return;
    }
    // Pipelined behind a response still being written: if the connection closes before its turn, Node never
    // emits this response's `close`. Whichever of the two comes first counts it down. A flag as well as the
    // removal: the socket's `close` may close the response from inside the same emit, whose listener array
    // was copied before, so the removed listener still runs once more.
    const socket = request.socket;
    let counted = false;
    const once = (): void => {
      if (counted) return;
      counted = true;
      socket.removeListener('close', once);
      response.removeListener('close', once);
      this.count -= 1;
    };
    response.on('close', once);
    socket.on('close', once);
  }
}
