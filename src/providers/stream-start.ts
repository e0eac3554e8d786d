import type { CanonicalEvent } from '../canonical/events.js';
import {
  batchOfResult,
  nextBatchOf,
  nextBatchThen,
  type BatchedIterator,
  type BatchStep,
} from '../streaming/event-batches.js';

const WINDOW_PASSED = Symbol('window passed');
const NO_EVENTS: readonly CanonicalEvent[] = [];

/**
 * Waits up to `windowMs` for a stream's first output event (anything after `response-start`), so that a vendor
 * that accepts a stream and fails before writing anything (Anthropic's `overloaded_error` right after
 * `message_start`, an OpenAI error chunk, a connection reset) fails inside the attempt, where it can still be
 * retried and answered with a proper HTTP status. If the window passes first (a slow first token), the stream
 * is handed over as it is: the client then gets its headers and keep-alive comments while it waits.
 *
 * The returned iterator replays what was read and then hands each `next()` straight to the vendor's iterator
 * (no extra generator per event), and forwards `return()` so an early stop still releases the connection.
 */
export async function primeStream(
  events: AsyncIterable<CanonicalEvent>,
  windowMs: number,
  onEnd?: () => void,
): Promise<AsyncIterable<CanonicalEvent>> {
  const iterator = events[Symbol.asyncIterator]();
  const buffered: CanonicalEvent[] = [];
  let timer: NodeJS.Timeout | undefined;
  const windowPassed = new Promise<typeof WINDOW_PASSED>((resolve) => {
    timer = setTimeout(resolve, windowMs, WINDOW_PASSED);
  });
  try {
    for (;;) {
      const pending = iterator.next();
      const result = await Promise.race([pending, windowPassed]);
      if (result === WINDOW_PASSED) return new PrimedEvents(buffered, pending, iterator, onEnd);
      if (result.done === true) return new PrimedEvents(buffered, undefined, iterator, onEnd);
      buffered.push(result.value);
      if (result.value.type !== 'response-start') return new PrimedEvents(buffered, undefined, iterator, onEnd);
    }
  } finally {
    clearTimeout(timer);
  }
}

/** A reader's `step` and `onError` (`of`, `ofError`) with the end watched. */
interface WatchedSteps<U> {
  of: BatchStep<CanonicalEvent, U>;
  ofError: ((error: unknown) => U | PromiseLike<U>) | undefined;
  step: BatchStep<CanonicalEvent, U>;
  onError: (error: unknown) => U | PromiseLike<U>;
}

class PrimedEvents implements AsyncIterableIterator<CanonicalEvent>, BatchedIterator<CanonicalEvent> {
  private index = 0;

  constructor(
    /** Emptied once replayed: a stream lives for minutes and need not keep its first events. */
    private buffered: readonly CanonicalEvent[],
    private pending: Promise<IteratorResult<CanonicalEvent>> | undefined,
    private readonly inner: AsyncIterator<CanonicalEvent>,
    /** Called once when the stream is over: read to its end, failed, or closed by its reader. */
    private onEnd: (() => void) | undefined,
  ) {}

  next(): Promise<IteratorResult<CanonicalEvent>> {
    if (this.index < this.buffered.length) {
      const value = this.buffered[this.index++]!;
      if (this.index === this.buffered.length) this.replayed();
      return Promise.resolve({ done: false, value });
    }
    const pending = this.pending;
    if (pending !== undefined) {
      this.pending = undefined;
      return this.watched(pending, (result) => result.done === true);
    }
    return this.watched(this.inner.next(), (result) => result.done === true);
  }

  nextBatch(): Promise<readonly CanonicalEvent[] | undefined> {
    if (this.index < this.buffered.length) {
      const rest = this.index === 0 ? this.buffered : this.buffered.slice(this.index);
      this.replayed();
      return Promise.resolve(rest);
    }
    const pending = this.pending;
    if (pending !== undefined) {
      this.pending = undefined;
      return this.watched(pending.then(batchOfResult), (batch) => batch === undefined);
    }
    return this.watched(nextBatchOf(this.inner), (batch) => batch === undefined);
  }

  nextBatchThen<U>(step: BatchStep<CanonicalEvent, U>, onError?: (error: unknown) => U | PromiseLike<U>): Promise<U> {
    if (this.index < this.buffered.length || this.pending !== undefined) return this.nextBatch().then(step, onError);
    if (this.onEnd === undefined) return nextBatchThen(this.inner, step, onError);
    const watched = this.watchedSteps(step, onError);
    return nextBatchThen(this.inner, watched.step, watched.onError);
  }

  /** The last pair made by `watchedSteps`, kept for the reader's next chunk. */
  private watchers: WatchedSteps<unknown> | undefined;

  /** `step` and `onError` that also see the end: made once per stream, not per chunk (the reader passes one pair). */
  private watchedSteps<U>(
    step: BatchStep<CanonicalEvent, U>,
    onError: ((error: unknown) => U | PromiseLike<U>) | undefined,
  ): WatchedSteps<U> {
    const kept = this.watchers as WatchedSteps<U> | undefined;
    if (kept !== undefined && kept.of === step && kept.ofError === onError) return kept;
    const made: WatchedSteps<U> = {
      of: step,
      ofError: onError,
      step: (batch) => {
        if (batch === undefined) this.end();
        return step(batch);
      },
      onError: (error: unknown) => {
        this.end();
        if (onError === undefined) throw error;
        return onError(error);
      },
    };
    this.watchers = made as WatchedSteps<unknown>;
    return made;
  }

  return(value?: unknown): Promise<IteratorResult<CanonicalEvent>> {
    this.end();
    return this.inner.return?.(value) ?? Promise.resolve({ done: true, value: undefined });
  }

  private replayed(): void {
    this.buffered = NO_EVENTS;
    this.index = 0;
  }

  /** `read`, with `onEnd` called when it is the last one or fails; as it is when nobody waits for the end. */
  private watched<R>(read: Promise<R>, isLast: (result: R) => boolean): Promise<R> {
    if (this.onEnd === undefined) return read;
    return read.then(
      (result) => {
        if (isLast(result)) this.end();
        return result;
      },
      (error: unknown) => {
        this.end();
        throw error;
      },
    );
  }

  private end(): void {
    const onEnd = this.onEnd;
    this.onEnd = undefined;
    onEnd?.();
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<CanonicalEvent> {
    return this;
  }
}
