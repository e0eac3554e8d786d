import type { CanonicalEvent } from '../canonical/events.js';
import type { CanonicalRequest } from '../canonical/request.js';
import { batchAsIs, nextBatchThen, type BatchedIterator, type BatchStep } from '../streaming/event-batches.js';

/**
 * Stop sequences matched by the gateway, for vendors that stop on a sequence without saying which one (OpenAI,
 * Gemini and DeepSeek answer a plain `stop`/`STOP`, and none of them returns the sequence in the text): the one
 * mechanism behind the canonical finish event's `stopSequence` for them, whatever the client protocol.
 *
 * The sequences are not sent upstream (a vendor that stopped on one would hide which one fired). The reply's text is
 * scanned as it streams, holding back the last `longest - 1` characters of each text block, which could still be the
 * start of a match; at the first match (the earliest position, the longest sequence there), the text before it goes
 * out, the block ends, the finish says `stop-sequence` with the matched string, and the upstream reply is abandoned
 * (its connection closed, so the vendor stops generating). Such a reply carries no vendor usage: billing counts what
 * was delivered (the pipeline's rule for replies the vendor never reported). Text only: reasoning and tool
 * arguments are not matched, as at the vendors. No heuristics: a stop is reported only where the text holds it.
 */

/** The request's stop sequences when the gateway should match them itself; undefined when it has none. */
export function gatewayStopSequences(request: CanonicalRequest): readonly string[] | undefined {
  const stop = request.sampling.stop?.filter((sequence) => sequence !== '');
  return stop === undefined || stop.length === 0 ? undefined : stop;
}

/** The request as the vendor gets it when the gateway matches the stop sequences: without them. */
export function withoutStopSequences(request: CanonicalRequest): CanonicalRequest {
  const { stop: _matchedHere, ...sampling } = request.sampling;
  return { ...request, sampling };
}

/** Canonical events in, the same events cut at the first stop sequence out; one instance per reply. */
export class StopSequenceMatcher {
  private readonly longest: number;
  /** Text of the open text block not yet passed on (it may begin a stop sequence). */
  private held = '';
  private heldBlock: string | undefined;
  private matchedSequence: string | undefined;

  constructor(private readonly sequences: readonly string[]) {
    this.longest = Math.max(...sequences.map((sequence) => sequence.length));
  }

  /** True once a sequence matched: the reply is over and nothing more from upstream is wanted. */
  get matched(): boolean {
    return this.matchedSequence !== undefined;
  }

  /** The events to pass on for one upstream event (none once a sequence matched). */
  push(event: CanonicalEvent): CanonicalEvent[] {
    if (this.matched) return [];
    if (event.type === 'text-delta') return this.text(event.blockId, event.text);
    // Anything else ends what text could still grow into a match: the held text goes out first, in order.
    return [...this.release(), event];
  }

  private text(blockId: string, text: string): CanonicalEvent[] {
    const out = blockId === this.heldBlock ? [] : this.release();
    this.heldBlock = blockId;
    const buffer = this.held + text;
    const match = this.firstMatch(buffer);
    if (match !== undefined) {
      this.held = '';
      this.heldBlock = undefined;
      this.matchedSequence = match.sequence;
      if (match.index > 0) out.push({ type: 'text-delta', blockId, text: buffer.slice(0, match.index) });
      out.push(
        { type: 'text-end', blockId },
        { type: 'finish', reason: 'stop-sequence', rawReason: 'stop_sequence', stopSequence: match.sequence },
      );
      return out;
    }
    let safe = Math.max(0, buffer.length - (this.longest - 1));
    // Never split a surrogate pair between what goes out and what is held.
    if (safe > 0 && safe < buffer.length && isHighSurrogate(buffer.charCodeAt(safe - 1))) safe -= 1;
    if (safe > 0) out.push({ type: 'text-delta', blockId, text: buffer.slice(0, safe) });
    this.held = buffer.slice(safe);
    return out;
  }

  /** The held text of the open block, as one delta (nothing when none is held). */
  private release(): CanonicalEvent[] {
    const blockId = this.heldBlock;
    const text = this.held;
    this.held = '';
    this.heldBlock = undefined;
    return blockId === undefined || text === '' ? [] : [{ type: 'text-delta', blockId, text }];
  }

  /** The earliest occurrence of any sequence; at one position the longest sequence wins (it contains the others). */
  private firstMatch(text: string): { index: number; sequence: string } | undefined {
    let best: { index: number; sequence: string } | undefined;
    for (const sequence of this.sequences) {
      const index = text.indexOf(sequence);
      if (index < 0) continue;
      if (best === undefined || index < best.index || (index === best.index && sequence.length > best.sequence.length))
        best = { index, sequence };
    }
    return best;
  }
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** A reply's events cut at the first stop sequence; the upstream iterator is closed (its request aborted) on a match. */
export function matchStopSequences(
  events: AsyncIterable<CanonicalEvent>,
  sequences: readonly string[],
): AsyncIterableIterator<CanonicalEvent> {
  return new MatchedEvents(events[Symbol.asyncIterator](), new StopSequenceMatcher(sequences));
}

class MatchedEvents implements AsyncIterableIterator<CanonicalEvent>, BatchedIterator<CanonicalEvent> {
  private readonly ready: CanonicalEvent[] = [];
  private done = false;

  constructor(
    private readonly upstream: AsyncIterator<CanonicalEvent>,
    private readonly matcher: StopSequenceMatcher,
  ) {}

  async next(): Promise<IteratorResult<CanonicalEvent, undefined>> {
    for (;;) {
      const event = this.ready.shift();
      if (event !== undefined) return { done: false, value: event };
      if (this.done) return { done: true, value: undefined };
      const result = await this.upstream.next();
      if (result.done === true) {
        this.done = true;
        continue;
      }
      this.ready.push(...this.matcher.push(result.value));
      if (this.matcher.matched) {
        this.done = true;
        // Abandon the rest of the reply: the vendor stops generating when its connection closes.
        await this.upstream.return?.();
      }
    }
  }

  /** What the matcher let through of the upstream's next batches, once there is any: all of it at once. */
  nextBatch(): Promise<readonly CanonicalEvent[] | undefined> {
    return this.nextBatchThen(batchAsIs);
  }

  /**
   * `nextBatch().then(step, onError)`, with `step` run in the callback that mapped the upstream's chunk (no promise
   * or microtask of this layer's own per chunk, see `BatchedIterator.nextBatchThen`); a chunk whose text is all
   * held back reads on, and a match closes the upstream first.
   */
  nextBatchThen<U>(step: BatchStep<CanonicalEvent, U>, onError?: (error: unknown) => U | PromiseLike<U>): Promise<U> {
    if (this.ready.length > 0) return Promise.resolve(this.takeReady()).then(step, onError);
    if (this.done) return Promise.resolve(undefined).then(step, onError);
    return nextBatchThen(
      this.upstream,
      (batch): U | PromiseLike<U> => {
        // Abandon the rest of the reply on a match: the vendor stops generating when its connection closes.
        if (this.match(batch))
          return Promise.resolve(this.upstream.return?.()).then(() => this.nextBatchThen(step, onError), onError);
        if (this.ready.length > 0) return step(this.takeReady());
        return this.done ? step(undefined) : this.nextBatchThen(step, onError);
      },
      onError,
    );
  }

  /** One upstream batch through the matcher into `ready` (undefined: the upstream is over); true on a match. */
  private match(batch: readonly CanonicalEvent[] | undefined): boolean {
    if (batch === undefined) {
      this.done = true;
      return false;
    }
    for (const event of batch) {
      this.ready.push(...this.matcher.push(event));
      if (this.matcher.matched) {
        this.done = true;
        return true;
      }
    }
    return false;
  }

  private takeReady(): CanonicalEvent[] {
    return this.ready.splice(0, this.ready.length);
  }

  async return(): Promise<IteratorResult<CanonicalEvent, undefined>> {
    this.ready.length = 0;
    if (!this.done) {
      this.done = true;
      await this.upstream.return?.();
    }
    return { done: true, value: undefined };
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}
