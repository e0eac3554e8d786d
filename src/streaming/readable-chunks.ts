import { Readable } from 'node:stream';

/** Bytes of a body held for a consumer that has not asked for them yet, before the body is paused. */
const HELD_BYTES_LIMIT = 64 * 1024;

const BODY_DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });

/**
 * The chunks of a response body, one `next()` at a time. A Node Readable (undici's body) is read through its
 * `data` events rather than its async iterator: that iterator is an async generator waiting on `readable`
 * events and `read()`, several promises and callbacks per chunk, which on a long stream cost about as much CPU
 * as mapping the chunk. Any other async iterable (tests' generators) is iterated as it is.
 */
export function bodyChunks(body: AsyncIterable<Uint8Array>): BodyChunks {
  return body instanceof Readable
    ? new ReadableChunks(body)
    : (body[Symbol.asyncIterator]() as AsyncIterator<Uint8Array, undefined>);
}

/** A body's chunks; a Readable's can also be taken without waiting when they already arrived. */
export interface BodyChunks extends AsyncIterator<Uint8Array, undefined> {
  /**
   * A chunk that already arrived and nobody took yet (several come in one socket read when the reader fell
   * behind), taken at once; undefined when none is held.
   */
  takeHeld?(): Uint8Array | undefined;
}

/**
 * A Readable's chunks, as its async iterator gives them: in order, the chunks that arrived before a failure
 * first, then the failure (again on every later call); `done` after `end`; a body closed without `end` or
 * an error is a premature close. A chunk goes straight to a waiting `next()`; chunks nobody waits for are held,
 * and past HELD_BYTES_LIMIT the body is paused (backpressure reaches the vendor's connection as before) until
 * they are taken.
 */
class ReadableChunks implements BodyChunks {
  private held: Uint8Array[] = [];
  private first = 0;
  private heldBytes = 0;
  private paused = false;
  private ended = false;
  private failure: { error: unknown } | undefined;
  private waiting:
    | { resolve: (result: IteratorResult<Uint8Array, undefined>) => void; reject: (error: unknown) => void }
    | undefined;

  constructor(private readonly body: Readable) {
    body.on('data', (chunk: Uint8Array) => {
      const waiting = this.waiting;
      if (waiting !== undefined) {
        this.waiting = undefined;
        waiting.resolve({ done: false, value: chunk });
        return;
      }
      this.held.push(chunk);
      this.heldBytes += chunk.byteLength;
      if (this.heldBytes > HELD_BYTES_LIMIT && !this.paused) {
        this.paused = true;
        body.pause();
      }
    });
    body.on('end', () => {
      this.ended = true;
      this.settleWaiting();
    });
    body.on('error', (error: unknown) => this.fail(error));
    body.on('close', () => {
      if (!this.ended) this.fail(new Error('The response body closed before it ended.'));
    });
  }

  next(): Promise<IteratorResult<Uint8Array, undefined>> {
    const held = this.takeHeld();
    if (held !== undefined) return Promise.resolve({ done: false, value: held });
    if (this.failure !== undefined) return Promise.reject(this.failure.error);
    if (this.ended) return Promise.resolve(BODY_DONE);
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
    });
  }

  takeHeld(): Uint8Array | undefined {
    if (this.first === this.held.length) return undefined;
    const chunk = this.held[this.first++]!;
    if (this.first === this.held.length) {
      this.held = [];
      this.first = 0;
      this.heldBytes = 0;
      if (this.paused) {
        this.paused = false;
        this.body.resume();
      }
    }
    return chunk;
  }

  private fail(error: unknown): void {
    if (this.failure !== undefined || this.ended) return;
    this.failure = { error };
    this.settleWaiting();
  }

  /** The body ended or failed while a `next()` waited (nothing is held then: a held chunk would have been taken). */
  private settleWaiting(): void {
    const waiting = this.waiting;
    if (waiting === undefined) return;
    this.waiting = undefined;
    if (this.failure !== undefined) waiting.reject(this.failure.error);
    else waiting.resolve(BODY_DONE);
  }
}
