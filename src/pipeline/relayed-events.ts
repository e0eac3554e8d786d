import { toGatewayError } from '../canonical/errors.js';
import type { CanonicalEvent } from '../canonical/events.js';
import type { ResponseAccumulator } from '../canonical/accumulate.js';
import type { CanonicalUsage } from '../canonical/usage.js';
import { batchAsIs, nextBatchThen, type BatchedIterator, type BatchStep } from '../streaming/event-batches.js';
import { OpenBlocks, type OutputGate } from './output-gate.js';

/**
 * How a reply ended, as its usage record's status. `slice_refused`: the account could not pay for more output;
 * the reply ended there as a length stop (docs/architecture.md#holds-that-grow).
 */
export type Outcome = 'ok' | 'client_disconnected' | 'upstream_error' | 'slice_refused';

/** Events that carry model output: the first one sent marks the time to first token. */
export const OUTPUT_EVENTS: ReadonlySet<CanonicalEvent['type']> = new Set([
  'text-delta',
  'reasoning-delta',
  'tool-call-start',
]);

export interface RelayHooks {
  /** The usage of a reply the vendor never reported (the tokenizer's count). */
  estimateUsage(): Promise<CanonicalUsage>;
  /** The outcome of an upstream failure (recording it); the error itself is rethrown by the iterator. */
  failed(): Outcome;
  /** Settles the reply with its outcome. */
  finish(outcome: Outcome): Promise<void>;
}

/** A consumer's `step` and `onError` (`of`, `ofError`) as the relay hands them to its upstream. */
interface RelayWrappers<U> {
  of: BatchStep<CanonicalEvent, U>;
  ofError: ((error: unknown) => U | PromiseLike<U>) | undefined;
  step: BatchStep<CanonicalEvent, U>;
  onError: (error: unknown) => U | PromiseLike<U>;
}

const RELAY_DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });
const NO_EVENTS: readonly CanonicalEvent[] = [];

/**
 * What `relay` hands out: the behaviour of the async generator it replaced,
 * `try { for await (event of upstream) { fold; yield event } synthesise usage; outcome = ok } catch { … } finally { settle }`:
 * the synthesised usage event is sent before settlement, a consumer that leaves early (`return()`) closes the
 * upstream and settles as disconnected, and settlement runs exactly once. Never asked for its next event
 * before the previous one resolved (the for-await contract).
 *
 * Every output event passes the OutputGate first (docs/architecture.md#holds-that-grow). When the account refuses a
 * slice, the event is withheld, the upstream is closed (the vendor stops), and the reply ends as a length stop: the
 * ends of the blocks still open, the usage of what was delivered, `finish` with reason `length`, which every client
 * protocol's encoder renders as its own length stop. It is settled as `slice_refused`, billing what was delivered.
 */
export class RelayedEvents implements AsyncIterableIterator<CanonicalEvent>, BatchedIterator<CanonicalEvent> {
  /**
   * `relaying`; `cut`: a slice was refused, the tail of a length stop is being made; `usage-sent`: the synthesised
   * usage (or the tail) went out, settlement is next; `done`: settled or settling.
   */
  private state: 'relaying' | 'cut' | 'usage-sent' | 'done' = 'relaying';
  private readonly openBlocks = new OpenBlocks();
  /** A batch handed out in part by `next()`: the rest is given before anything else is read. */
  private unread: readonly CanonicalEvent[] = NO_EVENTS;
  private unreadIndex = 0;
  private outcomeAfterTail: Outcome = 'ok';

  constructor(
    private readonly upstream: AsyncIterator<CanonicalEvent>,
    private readonly accumulator: ResponseAccumulator,
    private readonly gate: OutputGate,
    /** Told of the first output event (streams only: the time-to-first-token metric). */
    private onFirstOutput: (() => void) | undefined,
    private readonly hooks: RelayHooks,
  ) {}

  /** One event at a time, taken from the batches (for consumers that read events one by one). */
  async next(): Promise<IteratorResult<CanonicalEvent, undefined>> {
    if (this.unread.length === 0) {
      const batch = await this.nextBatch();
      if (batch === undefined) return RELAY_DONE;
      this.unread = batch;
      this.unreadIndex = 0;
    }
    const event = this.unread[this.unreadIndex++]!;
    if (this.unreadIndex === this.unread.length) this.unread = NO_EVENTS;
    return { done: false, value: event };
  }

  /**
   * The events of the upstream's next batch (one network chunk's), each passed by the gate and folded (ending
   * with the tail of a length stop when a slice was refused); the synthesised usage as a batch of its own;
   * undefined once settled.
   */
  nextBatch(): Promise<readonly CanonicalEvent[] | undefined> {
    return this.nextBatchThen(batchAsIs);
  }

  /**
   * `nextBatch().then(step, onError)`; while relaying, the gate, the fold and `step` run in the callback that mapped
   * the upstream's chunk (no promise or microtask of the relay's own per chunk: see `BatchedIterator.nextBatchThen`).
   */
  nextBatchThen<U>(step: BatchStep<CanonicalEvent, U>, onError?: (error: unknown) => U | PromiseLike<U>): Promise<U> {
    if (this.unread.length > 0) {
      const rest = this.unread.slice(this.unreadIndex);
      this.unread = NO_EVENTS;
      return Promise.resolve(rest).then(step, onError);
    }
    if (this.state !== 'relaying') return this.afterRelaying().then(step, onError);
    const wrapped = this.wrapped(step, onError);
    return nextBatchThen(this.upstream, wrapped.step, wrapped.onError);
  }

  /** The last wrappers made by `wrapped`, kept for the consumer's next chunk. */
  private wrappers: RelayWrappers<unknown> | undefined;

  /**
   * `step` and `onError` behind the gate and the fold, made once per stream rather than per chunk: the consumer
   * passes the same pair for every chunk, and so the layers below see one pair too (and keep their own).
   */
  private wrapped<U>(
    step: BatchStep<CanonicalEvent, U>,
    onError: ((error: unknown) => U | PromiseLike<U>) | undefined,
  ): RelayWrappers<U> {
    const kept = this.wrappers as RelayWrappers<U> | undefined;
    if (kept !== undefined && kept.of === step && kept.ofError === onError) return kept;
    const made: RelayWrappers<U> = {
      of: step,
      ofError: onError,
      step: (batch) => {
        const out = this.afterBatch(batch);
        return out instanceof Promise ? out.then(step, onError) : step(out);
      },
      onError: (error: unknown) => this.failed(error).then(step, onError),
    };
    this.wrappers = made as RelayWrappers<unknown>;
    return made;
  }

  /** An upstream batch through the gate and fold; at the upstream's end, the synthesised usage or settlement. */
  private afterBatch(
    batch: readonly CanonicalEvent[] | undefined,
  ): readonly CanonicalEvent[] | Promise<readonly CanonicalEvent[] | undefined> {
    if (batch === undefined) return this.ended();
    let admitted: readonly CanonicalEvent[] | Promise<readonly CanonicalEvent[]>;
    try {
      admitted = this.admit(batch);
    } catch (error) {
      return this.failed(error);
    }
    // A failure near the grant settles as the upstream's would.
    return admitted instanceof Promise ? admitted.catch((error: unknown) => this.failed(error)) : admitted;
  }

  /** The upstream is over: the usage the vendor never reported as a batch of its own, else settled `ok`. */
  private async ended(): Promise<readonly CanonicalEvent[] | undefined> {
    try {
      if (!this.accumulator.response.usageReported) {
        const event: CanonicalEvent = { type: 'usage', usage: await this.hooks.estimateUsage() };
        this.accumulator.apply(event);
        this.state = 'usage-sent';
        return [event];
      }
    } catch (error) {
      return this.failed(error);
    }
    this.state = 'done';
    await this.hooks.finish('ok');
    return undefined;
  }

  /** After the relaying: settlement once the usage (or a length stop's tail) went out, then nothing. */
  private async afterRelaying(): Promise<undefined> {
    if (this.state === 'usage-sent') {
      this.state = 'done';
      await this.hooks.finish(this.outcomeAfterTail);
    }
    return undefined;
  }

  /** The upstream (or the gate near the grant) failed: settled with the failure's outcome, the error rethrown. */
  private async failed(error: unknown): Promise<never> {
    this.state = 'done';
    await this.hooks.finish(this.hooks.failed());
    throw toGatewayError(error);
  }

  /**
   * Each event of a batch through the gate, then folded: synchronously while the output stays within the grant
   * (no promise per chunk), from the first event near the grant on by `admitNearGrant`.
   */
  private admit(batch: readonly CanonicalEvent[]): readonly CanonicalEvent[] | Promise<readonly CanonicalEvent[]> {
    for (let i = 0; i < batch.length; i++) {
      const event = batch[i]!;
      const pass = this.gate.pass(event);
      if (pass !== true) return this.admitNearGrant(batch, i, pass);
      this.follow(event);
    }
    return batch;
  }

  /**
   * The rest of a batch from event `index` on, whose pass is pending: it waits for its slice, and the events of
   * its chunk before it wait with it (one storage call per slice, not per chunk). A refused slice ends the batch
   * there: what passed, then the tail of the length stop.
   */
  private async admitNearGrant(
    batch: readonly CanonicalEvent[],
    index: number,
    pending: boolean | Promise<boolean>,
  ): Promise<readonly CanonicalEvent[]> {
    let pass: boolean | Promise<boolean> = pending;
    for (let i = index; i < batch.length; i++) {
      const event = batch[i]!;
      if (i > index) pass = this.gate.pass(event);
      if (pass !== true && !(await pass)) {
        const tail = await this.cut();
        this.state = 'usage-sent';
        return i === 0 ? tail : [...batch.slice(0, i), ...tail];
      }
      this.follow(event);
    }
    return batch;
  }

  /** A delivered event: folded into the reply, its blocks followed, the first output timed. */
  private follow(event: CanonicalEvent): void {
    this.accumulator.apply(event);
    this.openBlocks.follow(event);
    if (this.onFirstOutput !== undefined && OUTPUT_EVENTS.has(event.type)) {
      this.onFirstOutput();
      this.onFirstOutput = undefined;
    }
  }

  /** A slice was refused: stop the vendor; the tail of a length stop billing what was delivered, folded. */
  private async cut(): Promise<CanonicalEvent[]> {
    this.state = 'cut';
    this.outcomeAfterTail = 'slice_refused';
    try {
      await this.upstream.return?.();
    } catch {
      // Closing an upstream that failed meanwhile: nothing more will be read from it either way.
    }
    const usage: CanonicalEvent = { type: 'usage', usage: await this.hooks.estimateUsage() };
    const tail = [...this.openBlocks.ends(), usage, ...this.lengthFinishes()];
    for (const event of tail) this.accumulator.apply(event);
    return tail;
  }

  /** A length stop for each choice not finished yet (the first always, as a reply of one choice has). */
  private lengthFinishes(): CanonicalEvent[] {
    const response = this.accumulator.response;
    const finishes: CanonicalEvent[] = [];
    if (response.finishReason === null) finishes.push({ type: 'finish', reason: 'length', rawReason: null });
    response.moreChoices?.forEach((choice, index) => {
      if (choice.finishReason === null)
        finishes.push({ type: 'finish', reason: 'length', rawReason: null, choice: index + 1 });
    });
    return finishes.length > 0 ? finishes : [{ type: 'finish', reason: 'length', rawReason: null }];
  }

  /** The consumer left: close the upstream (unless it is over) and settle as disconnected. */
  async return(): Promise<IteratorResult<CanonicalEvent, undefined>> {
    if (this.state === 'done') return RELAY_DONE;
    const upstreamOpen = this.state === 'relaying';
    const cut = this.state === 'cut' || this.outcomeAfterTail === 'slice_refused';
    this.state = 'done';
    try {
      if (upstreamOpen) await this.upstream.return?.();
    } finally {
      await this.hooks.finish(cut ? 'slice_refused' : 'client_disconnected');
    }
    return RELAY_DONE;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}
