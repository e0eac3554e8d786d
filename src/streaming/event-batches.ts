/**
 * Event streams that hand out, in one call, the events that are ready together: those mapped from one upstream
 * network chunk. A long stream is hundreds to thousands of chunks, and each layer between the vendor's body and
 * the client's socket (mapping, stop sequences, metering, encoding) cost a promise per event when every event
 * was its own `next()`; with batches it is one per chunk, and the client gets one write per chunk.
 */

/** An async iterator of events that can also give everything it has ready at once. */
export interface BatchedIterator<T> extends AsyncIterator<T, undefined> {
  /**
   * The events ready now, in order: at least one, waiting for the next upstream chunk only when none is ready;
   * undefined when the stream is over. It shares its position with `next()` (a caller may use either), fails
   * where `next()` would, and `return()` still closes the stream. Never called again before it resolved.
   */
  nextBatch(): Promise<readonly T[] | undefined>;
  /**
   * `nextBatch().then(step, onError)`, with `step` run in the callback that made the batch rather than a microtask
   * later: layers that pass it down (each wrapping it in its own synchronous work) cost one microtask per chunk for
   * the whole chain instead of one per layer. In the timed bench each chunk arrives alone and is its own batch, so
   * those hops were a large part of a chunk's cost. `step` must not throw (it returns its failure as a
   * value): a throw would read as a failure of the layer that called it. `onError` gets this iterator's failure,
   * as `nextBatch()`'s rejection would give it.
   */
  nextBatchThen?<U>(step: BatchStep<T, U>, onError?: (error: unknown) => U | PromiseLike<U>): Promise<U>;
}

/** What a consumer does with a batch (undefined: the stream is over) when it is there. */
export type BatchStep<T, U> = (batch: readonly T[] | undefined) => U | PromiseLike<U>;

/** The step of a plain `nextBatch()`: the batch as it is (`nextBatch()` is `nextBatchThen(batchAsIs)`). */
export const batchAsIs = <T>(batch: readonly T[] | undefined): readonly T[] | undefined => batch;

function isBatched<T>(iterator: AsyncIterator<T, unknown>): iterator is BatchedIterator<T> {
  return typeof (iterator as Partial<BatchedIterator<T>>).nextBatch === 'function';
}

/**
 * The next batch of any event iterator: its own when it is batched, otherwise its next event alone. Not an
 * async function: a batched iterator's promise is handed on as it is, without one more promise per chunk.
 */
export function nextBatchOf<T>(iterator: AsyncIterator<T, unknown>): Promise<readonly T[] | undefined> {
  if (isBatched(iterator)) return iterator.nextBatch();
  return iterator.next().then(batchOfResult);
}

/**
 * `nextBatchOf(iterator).then(step, onError)`, in one callback when the iterator can (see `nextBatchThen`). Not an
 * async function, for the same reason as `nextBatchOf`.
 */
export function nextBatchThen<T, U>(
  iterator: AsyncIterator<T, unknown>,
  step: BatchStep<T, U>,
  onError?: (error: unknown) => U | PromiseLike<U>,
): Promise<U> {
  if (isBatched(iterator)) {
    return iterator.nextBatchThen !== undefined
      ? iterator.nextBatchThen(step, onError)
      : iterator.nextBatch().then(step, onError);
  }
  return iterator.next().then((result) => step(batchOfResult(result)), onError);
}

/** One `next()` result as a batch: its event alone, or undefined when the stream is over. */
export function batchOfResult<T>(result: IteratorResult<T, unknown>): readonly T[] | undefined {
  return result.done === true ? undefined : [result.value];
}
