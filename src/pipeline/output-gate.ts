import { countTextTokens, loadTokenizer, utf8UpperBound } from '../canonical/count-tokens.js';
import type { CanonicalEvent } from '../canonical/events.js';

/** Asks storage for `tokens` more output on the request's hold; resolves to the tokens granted (0: refused). */
export type SliceGrant = (tokens: number) => Promise<number>;

/**
 * Meters a reply's output against what its hold covers (docs/architecture.md#holds-that-grow), and grows the hold a
 * slice at a time.
 *
 * Per event it costs one UTF-8 length: every o200k token stands for at least one byte, so delivered bytes bound
 * the delivered tokens from above, and while that bound stays within the granted output nothing else happens (a
 * typical reply never loads the tokenizer here, never calls storage). When the bound would pass the grant, the
 * output so far is counted with the tokenizer (only the text since the last count), and only when the count
 * would pass it too is a slice asked for: one storage call per slice, never per chunk. An event the account
 * cannot pay for is not delivered: the caller ends the reply there as a length stop, and its tokens are the
 * vendor's overrun (`unbilledTokens`): at most the event that crossed the grant, as nothing is read after it.
 */
export class OutputGate {
  /** Tokens counted of the output delivered up to the last count. */
  private counted = 0;
  /** Output delivered since the last count, and its UTF-8 upper bound. */
  private pending: string[] = [];
  private pendingBound = 0;
  private delivered = false;
  /** Output the vendor produced that the account could not pay for: never delivered, never billed. */
  unbilledTokens = 0;

  constructor(
    /** Output tokens the hold covers so far: read on every event, grown by `grant`. */
    private readonly granted: () => number,
    /** The most output the request may have in all (the client's limit or the model's): no slice beyond it. */
    private readonly limit: number,
    private readonly sliceTokens: number,
    private readonly grant: SliceGrant,
  ) {}

  /** Whether any output went out (a checkpoint is written from then on). */
  get started(): boolean {
    return this.delivered;
  }

  /**
   * True: deliver the event. A promise: the output is near the grant; it resolves to whether the event may go
   * (false: the account refused a slice, the event is withheld and the reply ends as a length stop).
   */
  pass(event: CanonicalEvent): boolean | Promise<boolean> {
    const text = outputText(event);
    if (text === undefined) return true;
    const bound = utf8UpperBound(text);
    // Within the grant by the bound, or the hold already covers the request's whole limit (the vendor stops there).
    const granted = this.granted();
    if (this.counted + this.pendingBound + bound <= granted || granted >= this.limit) {
      this.take(text, bound);
      return true;
    }
    return this.passNearGrant(text, bound);
  }

  /** Output tokens delivered so far, by the tokenizer (which must be loaded: `loadTokenizer`). */
  deliveredTokens(): number {
    if (this.pending.length > 0) {
      this.counted += countTextTokens(this.pending.join(''));
      this.pending = [];
      this.pendingBound = 0;
    }
    return this.counted;
  }

  private take(text: string, bound: number): void {
    this.pending.push(text);
    this.pendingBound += bound;
    this.delivered = true;
  }

  private async passNearGrant(text: string, bound: number): Promise<boolean> {
    await loadTokenizer();
    const needed = this.deliveredTokens() + countTextTokens(text);
    while (needed > this.granted()) {
      const room = this.limit - this.granted();
      // The hold already covers the request's whole limit: the vendor stops there itself (what it counts beyond
      // the tokenizer's estimate is settled from its usage, as before slices).
      if (room <= 0) break;
      const tokens = Math.min(room, Math.max(this.sliceTokens, needed - this.granted()));
      if ((await this.grant(tokens)) <= 0) {
        this.unbilledTokens += countTextTokens(text);
        return false;
      }
    }
    this.take(text, bound);
    return true;
  }
}

/** The text an event adds to the reply's output (what the tokenizer counts for it), or undefined for none. */
export function outputText(event: CanonicalEvent): string | undefined {
  switch (event.type) {
    case 'text-delta':
    case 'reasoning-delta':
      return event.text;
    case 'tool-call-start':
      return event.name;
    case 'tool-call-delta':
      return event.argumentsDelta;
    default:
      return undefined;
  }
}

/** The UTF-8 upper bound of all output tokens in a whole reply's events: within the grant, no slice is needed. */
export function outputUpperBound(events: readonly CanonicalEvent[]): number {
  let total = 0;
  for (const event of events) {
    const text = outputText(event);
    if (text !== undefined) total += utf8UpperBound(text);
  }
  return total;
}

/** The end events of blocks still open when a reply is cut (a length stop), in the order they opened. */
export class OpenBlocks {
  private readonly open = new Map<string, CanonicalEvent>();

  follow(event: CanonicalEvent): void {
    switch (event.type) {
      case 'text-start':
        this.open.set(event.blockId, { type: 'text-end', blockId: event.blockId });
        return;
      case 'reasoning-start':
        this.open.set(event.blockId, { type: 'reasoning-end', blockId: event.blockId });
        return;
      case 'tool-call-start':
        this.open.set(event.blockId, { type: 'tool-call-end', blockId: event.blockId });
        return;
      case 'text-end':
      case 'reasoning-end':
      case 'tool-call-end':
        this.open.delete(event.blockId);
        return;
      default:
        return;
    }
  }

  ends(): CanonicalEvent[] {
    return [...this.open.values()];
  }
}
