import { toGatewayError } from '../canonical/errors.js';
import type { CanonicalEvent } from '../canonical/events.js';
import type { ResponseAccumulator } from '../canonical/accumulate.js';
import type { CanonicalUsage } from '../canonical/usage.js';
import { OpenBlocks, type OutputGate } from './output-gate.js';

/**
 * How a reply ended, as its usage record's status. `slice_refused`: the account could not pay for more output;
 * the reply ended there as a length stop (issue 21).
 */
export type Outcome = 'ok' | 'client_disconnected' | 'upstream_error' | 'slice_refused';

/** Events that carry model output: the first one sent marks the time to first token. */
export const OUTPUT_EVENTS: ReadonlySet<CanonicalEvent['type']> = new Set(['text-delta', 'reasoning-delta', 'tool-call-start']);

export interface RelayHooks {
  /** The usage of a reply the vendor never reported (the tokenizer's count). */
  estimateUsage(): Promise<CanonicalUsage>;
  /** The outcome of an upstream failure (recording it); the error itself is rethrown by the iterator. */
  failed(): Outcome;
  /** Settles the reply with its outcome. */
  finish(outcome: Outcome): Promise<void>;
}

const RELAY_DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });

/**
 * What `relay` hands out: the behaviour of the async generator it replaced,
 * `try { for await (event of upstream) { fold; yield event } synthesise usage; outcome = ok } catch { … } finally { settle }`:
 * the synthesised usage event is sent before settlement, a consumer that leaves early (`return()`) closes the
 * upstream and settles as disconnected, and settlement runs exactly once. Never asked for its next event
 * before the previous one resolved (the for-await contract).
 *
 * Every output event passes the OutputGate first (issue 21). When the account refuses a slice, the event is
 * withheld, the upstream is closed (the vendor stops), and the reply ends as a length stop: the ends of the
 * blocks still open, the usage of what was delivered, `finish` with reason `length`, which every client
 * protocol's encoder renders as its own length stop. It is settled as `slice_refused`, billing what was delivered.
 */
export class RelayedEvents implements AsyncIterableIterator<CanonicalEvent> {
  /**
   * `relaying`; `cut`: a slice was refused, the tail of a length stop is being sent; `usage-sent`: the synthesised
   * usage (or the tail) went out, settlement is next; `done`: settled or settling.
   */
  private state: 'relaying' | 'cut' | 'usage-sent' | 'done' = 'relaying';
  private readonly openBlocks = new OpenBlocks();
  private tail: CanonicalEvent[] = [];
  private outcomeAfterTail: Outcome = 'ok';

  constructor(
    private readonly upstream: AsyncIterator<CanonicalEvent>,
    private readonly accumulator: ResponseAccumulator,
    private readonly gate: OutputGate,
    /** Told of the first output event (streams only: the time-to-first-token metric). */
    private onFirstOutput: (() => void) | undefined,
    private readonly hooks: RelayHooks,
  ) {}

  async next(): Promise<IteratorResult<CanonicalEvent, undefined>> {
    if (this.state === 'done') return RELAY_DONE;
    if (this.state === 'cut') {
      const event = this.tail.shift()!;
      if (this.tail.length === 0) this.state = 'usage-sent';
      return { done: false, value: event };
    }
    if (this.state === 'usage-sent') {
      this.state = 'done';
      await this.hooks.finish(this.outcomeAfterTail);
      return RELAY_DONE;
    }
    try {
      const result = await this.upstream.next();
      if (result.done !== true) {
        const event = result.value;
        const pass = this.gate.pass(event);
        if (pass !== true && !(await pass)) return await this.cut();
        this.accumulator.apply(event);
        this.openBlocks.follow(event);
        if (this.onFirstOutput !== undefined && OUTPUT_EVENTS.has(event.type)) {
          this.onFirstOutput();
          this.onFirstOutput = undefined;
        }
        return { done: false, value: event };
      }
      if (!this.accumulator.response.usageReported) {
        const event: CanonicalEvent = { type: 'usage', usage: await this.hooks.estimateUsage() };
        this.accumulator.apply(event);
        this.state = 'usage-sent';
        return { done: false, value: event };
      }
    } catch (error) {
      this.state = 'done';
      await this.hooks.finish(this.hooks.failed());
      throw toGatewayError(error);
    }
    this.state = 'done';
    await this.hooks.finish('ok');
    return RELAY_DONE;
  }

  /** A slice was refused: stop the vendor, then end the reply as a length stop billing what was delivered. */
  private async cut(): Promise<IteratorResult<CanonicalEvent, undefined>> {
    this.state = 'cut';
    this.outcomeAfterTail = 'slice_refused';
    try {
      await this.upstream.return?.();
    } catch {
      // Closing an upstream that failed meanwhile: nothing more will be read from it either way.
    }
    const usage: CanonicalEvent = { type: 'usage', usage: await this.hooks.estimateUsage() };
    const finish: CanonicalEvent = { type: 'finish', reason: 'length', rawReason: null };
    this.tail = [...this.openBlocks.ends(), usage, finish];
    for (const event of this.tail) this.accumulator.apply(event);
    return this.next();
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
