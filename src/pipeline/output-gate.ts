import { countTextTokens, loadTokenizer, utf8UpperBound } from '../canonical/count-tokens.js';
import type { CanonicalEvent } from '../canonical/events.js';

/**
 * Asks storage for `tokens` more output on the request's hold; resolves to the tokens granted (0: refused).
 * `whole`: all of them or none (a slice sized in bytes); otherwise less than asked when only that is left.
 */
export type SliceGrant = (tokens: number, whole: boolean) => Promise<number>;

/**
 * A slice asked for by bytes is this many configured slices: prose runs ~4 UTF-8 bytes per o200k token, so a long
 * reply metered by bytes asks about as many slices as one counted exactly (docs/decisions/0021).
 */
export const BYTE_SLICE_MULTIPLE = 4;

/**
 * Meters a reply's output against what its hold covers (docs/architecture.md#holds-that-grow), and grows the hold a
 * slice at a time.
 *
 * It meters by UTF-8 bytes: every token of the tokenizers in use stands for at least one byte, so the bytes
 * delivered bound the tokens delivered from above. Per event that is one UTF-8 length; while the bound stays within
 * the grant nothing else happens, and when it would pass the grant a slice sized in bytes is asked for, whole or
 * not at all: one storage call per slice, never per chunk, and no tokenizer while the account can pay. Only when
 * such a slice is refused (the account, or a limit over it, is near its end) does the gate count exactly from then
 * on (`passNearGrant`, the text since the last count), asking for what the count needs, so a request near a limit
 * gets every token it can pay for. An event the account cannot pay for is not delivered: the caller ends the
 * reply there as a length stop, and its tokens are the vendor's overrun (`unbilledTokens`): at most the event that
 * crossed the grant, as nothing is read after it.
 */
export class OutputGate {
  /** Tokens counted of the output delivered up to the last count. */
  private counted = 0;
  /** Whether the tokenizer has counted yet (a reply metered by bytes may never be). */
  private everCounted = false;
  /** Output delivered since the last count, and its UTF-8 upper bound. */
  private pending: string[] = [];
  private pendingBound = 0;
  private delivered = false;
  /** Set once a byte-sized slice was refused: from then on every slice is asked for by the exact count. */
  private countsExactly = false;
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
    return this.countsExactly ? this.passNearGrant(text, bound) : this.passByBytes(text, bound);
  }

  /** Output tokens delivered so far, by the tokenizer (which must be loaded: `loadTokenizer`). */
  deliveredTokens(): number {
    if (this.pending.length > 0) {
      this.counted += countTextTokens(this.pending.join(''));
      this.pending = [];
      this.pendingBound = 0;
    }
    this.everCounted = true;
    return this.counted;
  }

  /**
   * The tokens of the last exact count, a part of what was delivered, without counting (undefined before any):
   * what a slice's checkpoint carries while the gate meters by bytes.
   */
  lastCount(): number | undefined {
    return this.everCounted ? this.counted : undefined;
  }

  private take(text: string, bound: number): void {
    this.pending.push(text);
    this.pendingBound += bound;
    this.delivered = true;
  }

  /**
   * The bytes would pass the grant: a slice of BYTE_SLICE_MULTIPLE configured slices (more when the event needs it),
   * whole or not at all. Refused, the account is near a limit and this event is decided by the exact count.
   */
  private async passByBytes(text: string, bound: number): Promise<boolean> {
    const granted = this.granted();
    const needed = this.counted + this.pendingBound + bound;
    const tokens = Math.min(this.limit - granted, Math.max(BYTE_SLICE_MULTIPLE * this.sliceTokens, needed - granted));
    if ((await this.grant(tokens, true)) >= tokens) {
      this.take(text, bound);
      return true;
    }
    this.countsExactly = true;
    return this.passNearGrant(text, bound);
  }

  /** The exact count near the grant: slices asked for by what it needs, less than asked when only that is left. */
  private async passNearGrant(text: string, bound: number): Promise<boolean> {
    await loadTokenizer();
    const needed = this.deliveredTokens() + countTextTokens(text);
    while (needed > this.granted()) {
      const room = this.limit - this.granted();
      // The hold already covers the request's whole limit: the vendor stops there itself (what it counts beyond
      // the tokenizer's estimate is settled from its usage, as before slices).
      if (room <= 0) break;
      const tokens = Math.min(room, Math.max(this.sliceTokens, needed - this.granted()));
      if ((await this.grant(tokens, false)) <= 0) {
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
