import { batchAsIs, type BatchedIterator, type BatchStep } from './event-batches.js';
import { bodyChunks, type BodyChunks } from './readable-chunks.js';
import { SseDecoder, type SseEvent } from './sse-decoder.js';

/** A vendor's stream mapper: SSE events in, the caller's events out. */
export interface SseEventMapper<T> {
  map(event: SseEvent): readonly T[];
  /** The events owed at the end of the stream (or a throw when the stream ended too early). */
  end(): readonly T[];
}

export interface SseMappedStreamOptions<T> {
  mapper: SseEventMapper<T>;
  /** True once the mapper saw the stream's terminal event: nothing after it is read. */
  isComplete: () => boolean;
  /** What a failure while reading or mapping the body becomes (a mid-stream error). */
  wrapError: (error: unknown) => Error;
  /** Stops reading and releases the connection; called once, whichever way the stream ends. */
  release: () => void;
}

const NO_EVENTS: readonly never[] = [];

/** The callbacks `nextBatchThen` reads the body with, for one `step` and `onError`. */
interface ReadHandlers<T, U> {
  step: BatchStep<T, U>;
  onError: ((error: unknown) => U | PromiseLike<U>) | undefined;
  onChunk: (chunk: IteratorResult<Uint8Array>) => U | PromiseLike<U>;
  onReadError: (error: unknown) => U | PromiseLike<U>;
}
const STREAM_DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });
/** What is read after a stream's terminal event before the connection is given up instead. */
const DRAIN_LIMIT_BYTES = 64 * 1024;

/**
 * A vendor's SSE body as mapped events, in one iterator: the same behaviour as an async generator that decodes
 * each chunk (`SseDecoder`), does `yield* mapper.map(sse)` for each event and `yield* mapper.end()` at the end,
 * without the generator layers and the per-event promises of `yield*` over an array, which were most of what a
 * streamed request allocated per chunk. Events of one network chunk are mapped together and handed out with no
 * further read, one at a time (`next`) or all at once (`nextBatch`); a mapping failure is thrown after the events
 * mapped before it. Never asked for its next event before the previous one resolved (the for-await contract).
 */
export class SseMappedStream<T> implements AsyncIterableIterator<T>, BatchedIterator<T> {
  private readonly decoder = new SseDecoder();
  private readonly source: BodyChunks;
  private readonly options: SseMappedStreamOptions<T>;
  private queue: readonly T[] = NO_EVENTS;
  private index = 0;
  /** `reading` the body; `ending`: the body is over, the mapper's end events are still owed; `done`. */
  private state: 'reading' | 'ending' | 'done' = 'reading';
  private failure: { error: unknown } | undefined;

  constructor(body: AsyncIterable<Uint8Array>, options: SseMappedStreamOptions<T>) {
    this.source = bodyChunks(body);
    this.options = options;
  }

  next(): Promise<IteratorResult<T, undefined>> {
    if (this.index < this.queue.length) return Promise.resolve({ done: false, value: this.queue[this.index++]! });
    return this.refill().then((more) => (more ? { done: false, value: this.queue[this.index++]! } : STREAM_DONE));
  }

  /** The events of the chunks read so far that nobody took yet, else those of the next chunk that has any. */
  nextBatch(): Promise<readonly T[] | undefined> {
    return this.nextBatchThen(batchAsIs);
  }

  /**
   * `nextBatch().then(step, onError)` with `step` run in the same callback as the chunk's mapping: the layers above
   * (the relay's gate and fold, the client's encoding and write) then cost no microtask of their own per chunk.
   */
  nextBatchThen<U>(step: BatchStep<T, U>, onError?: (error: unknown) => U | PromiseLike<U>): Promise<U> {
    if (this.index < this.queue.length) return Promise.resolve(this.takeRest()).then(step, onError);
    if (this.state !== 'reading' || this.failure !== undefined) return this.refilledBatch().then(step, onError);
    // While reading: the chunk's events are mapped and handed out in one callback on the body's promise, rather
    // than `refill` awaiting the body and a `then` on refill's promise. Still a microtask after the chunk's `data`
    // event, so chunks of the same socket read join the batch.
    const handlers = this.readHandlers(step, onError);
    return this.source.next().then(handlers.onChunk, handlers.onReadError);
  }

  /** The last callbacks made by `readHandlers`, kept for the caller's next chunk. */
  private handlers: ReadHandlers<T, unknown> | undefined;

  /**
   * The body's callbacks for `step` and `onError`: made once per stream, not per chunk, as the layers above pass
   * the same pair for every chunk (a pair of closures per chunk was garbage on every chunk of a long stream).
   */
  private readHandlers<U>(
    step: BatchStep<T, U>,
    onError: ((error: unknown) => U | PromiseLike<U>) | undefined,
  ): ReadHandlers<T, U> {
    const kept = this.handlers as ReadHandlers<T, U> | undefined;
    if (kept !== undefined && kept.step === step && kept.onError === onError) return kept;
    const onChunk = (chunk: IteratorResult<Uint8Array>): U | PromiseLike<U> => {
      let batch: readonly T[] | undefined | Promise<readonly T[] | undefined>;
      try {
        batch = this.batchOfChunk(chunk);
      } catch (error) {
        // A throw while decoding goes to `onError`, as a rejection would: the layer above settles on it.
        if (onError === undefined) throw error;
        return onError(error);
      }
      return batch instanceof Promise ? batch.then(step, onError) : step(batch);
    };
    const onReadError = onError === undefined ? this.readFailed : (error: unknown) => onError(this.readFailure(error));
    const made: ReadHandlers<T, U> = { step, onError, onChunk, onReadError };
    this.handlers = made as ReadHandlers<T, unknown>;
    return made;
  }

  /** A chunk (or the body's end) read by `nextBatch`: its events, else whatever `refill` finds next. */
  private batchOfChunk(
    chunk: IteratorResult<Uint8Array>,
  ): readonly T[] | undefined | Promise<readonly T[] | undefined> {
    this.mapRead(chunk);
    if (this.index < this.queue.length) return this.takeRest();
    return this.refilledBatch();
  }

  /** The events `refill` finds next as a batch, undefined when the stream is over. */
  private refilledBatch(): Promise<readonly T[] | undefined> {
    return this.refill().then((more) => (more ? this.takeRest() : undefined));
  }

  private readonly readFailed = (error: unknown): never => {
    throw this.readFailure(error);
  };

  /** A failure reading or mapping the body: the stream is over, the error as the consumer gets it. */
  private readFailure(error: unknown): Error {
    this.finish();
    return this.options.wrapError(error);
  }

  /** Reads (and maps) until events are queued: true; false when the stream is over. Throws a failure in turn. */
  private async refill(): Promise<boolean> {
    for (;;) {
      if (this.index < this.queue.length) return true;
      if (this.failure !== undefined) {
        const { error } = this.failure;
        this.failure = undefined;
        throw this.readFailure(error);
      }
      if (this.state === 'done') return false;
      if (this.state === 'ending') {
        this.state = 'done';
        // Not a body failure: the mapper's own verdict on how the stream ended, thrown as it is.
        this.take(this.options.mapper.end());
        continue;
      }
      let chunk: IteratorResult<Uint8Array>;
      try {
        chunk = await this.source.next();
      } catch (error) {
        throw this.readFailure(error);
      }
      this.mapRead(chunk);
    }
  }

  /** Decodes and maps what one read of the body gave (with the chunks held behind it), or the body's end. */
  private mapRead(chunk: IteratorResult<Uint8Array>): void {
    if (chunk.done === true) {
      this.mapChunk(this.decoder.end(), true);
      return;
    }
    let events = this.decoder.push(chunk.value);
    // Chunks that came in the same socket read (the reader fell behind) are mapped with it: one batch, one write.
    // The decoder hands each call a fresh array, so the later ones are appended to it in place: a copy of the
    // whole batch per held chunk made a batch of k chunks cost k^2/2 element copies (a reader that fell
    // far behind on a 500-chunk stream allocated ~3 KB per chunk here).
    for (let held = this.source.takeHeld?.(); held !== undefined; held = this.source.takeHeld?.()) {
      const more = this.decoder.push(held);
      if (more.length === 0) continue;
      if (events.length === 0) events = more;
      else for (const event of more) events.push(event);
    }
    this.mapChunk(events, false);
  }

  private takeRest(): readonly T[] {
    const rest = this.index === 0 ? this.queue : this.queue.slice(this.index);
    this.index = this.queue.length;
    return rest;
  }

  /** The consumer left early: stop reading and release the connection. */
  async return(): Promise<IteratorResult<T, undefined>> {
    this.queue = NO_EVENTS;
    this.failure = undefined;
    this.finish();
    return { done: true, value: undefined };
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  private mapChunk(events: readonly SseEvent[], bodyEnded: boolean): void {
    const { mapper, isComplete } = this.options;
    // Usually one SSE event per chunk: its mapped array is taken as it is, a copy only when there are several.
    let mapped: readonly T[] = NO_EVENTS;
    let copied = false;
    let complete = bodyEnded;
    try {
      for (const event of events) {
        const out = mapper.map(event);
        if (out.length > 0) {
          if (mapped.length === 0) mapped = out;
          else if (copied) (mapped as T[]).push(...out);
          else {
            mapped = [...mapped, ...out];
            copied = true;
          }
        }
        if (isComplete()) {
          complete = true;
          break;
        }
      }
    } catch (error) {
      // Delivered after what was mapped before it, as the generator did.
      this.failure = { error };
    }
    this.take(mapped);
    if (complete && this.failure === undefined) {
      if (bodyEnded) this.release();
      else this.drainRest();
      this.state = 'ending';
    }
  }

  /**
   * The terminal event came before the body's end (its last chunk, a trailing blank line): read the rest in the
   * background, then release. Releasing at once destroyed a body that had not ended, which undici treats as an
   * aborted request: an error object with its stack trace per stream (profiled: ~2% of a streamed request's
   * CPU) and, when the vendor's last bytes were still on the way, a closed keep-alive connection. A vendor that
   * keeps sending after its terminal event is cut off after DRAIN_LIMIT_BYTES; one that never ends the body is
   * cut off by the idle timeout, as any stalled body.
   */
  private drainRest(): void {
    this.released = true;
    let bytes = 0;
    const release = () => this.options.release();
    const readOn = (chunk: IteratorResult<Uint8Array>): void => {
      if (chunk.done === true) {
        release();
        return;
      }
      bytes += chunk.value.byteLength;
      if (bytes > DRAIN_LIMIT_BYTES) release();
      else this.source.next().then(readOn, release);
    };
    this.source.next().then(readOn, release);
  }

  private take(events: readonly T[]): void {
    this.queue = events;
    this.index = 0;
  }

  private finish(): void {
    this.state = 'done';
    this.release();
  }

  private released = false;

  private release(): void {
    if (this.released) return;
    this.released = true;
    this.options.release();
  }
}
