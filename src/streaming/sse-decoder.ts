/**
 * Incremental Server-Sent-Events decoder following the WHATWG "event stream interpretation" rules
 * (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation).
 *
 * It sits on the hot path of every streamed request, so it never looks at bytes one by one in JavaScript:
 * UTF-8 decoding is node:string_decoder's (a character split across chunks is held back and joined), and lines
 * are found with `indexOf`. Not TextDecoder: on Node 20 its streaming decode goes through ICU, about 3k
 * instructions per chunk before any line is read; StringDecoder decodes with V8's UTF-8 path. It keeps a
 * leading byte order mark, which the spec says to drop, so the decoder drops it itself. Text of an unfinished line is kept as-is and only the newly arrived text is scanned,
 * so a long line arriving in many small chunks costs linear time.
 *
 * End of stream: the spec discards an event that has not been terminated by a blank line when the stream
 * ends ("If the file ends in the middle of an event, before the final empty line, the incomplete event is
 * not dispatched"). `end()` follows that rule and never dispatches; `discardedAtEnd` tells a caller that
 * such a tail existed, which for an LLM stream is a sign the upstream was cut off.
 */

export interface SseEvent {
  /** The `event:` field; absent when the event has no (or an empty) type, i.e. the default "message". */
  event?: string;
  /** Every `data:` line of the event joined with "\n". */
  data: string;
  /** The last event id seen on the stream (the spec keeps it across events until an `id:` field changes it). */
  id?: string;
  /** A `retry:` value (milliseconds) given inside this event. */
  retry?: number;
}

export interface SseDecoderOptions {
  /** Called with the text after ":" of each comment line (e.g. " keep-alive"), for callers that watch keep-alives. */
  onComment?: (text: string) => void;
}

import { StringDecoder } from 'node:string_decoder';

const LF = '\n';
const CR = '\r';

export class SseDecoder {
  /** Number of comment lines seen so far (keep-alives such as `: ping`). */
  comments = 0;
  /** Last `retry:` value seen on the stream, if any: the spec makes it a property of the stream. */
  retry: number | undefined;

  readonly #textDecoder = new StringDecoder('utf8');
  /** No text seen yet: a U+FEFF opening the stream is a byte order mark, not content. */
  #atStart = true;
  readonly #onComment: ((text: string) => void) | undefined;
  /** Text of the current line that has not seen its line end yet. */
  #partialLine = '';
  /** The previous chunk ended with CR: a LF opening the next chunk belongs to that CR. */
  #skipLeadingLf = false;
  // Field buffers of the event being assembled. `undefined` data = no data line yet (not dispatched).
  #data: string | undefined;
  #eventType = '';
  #retryInEvent: number | undefined;
  #lastEventId = '';
  #fieldsSinceDispatch = false;
  #ended = false;
  #discardedAtEnd = false;

  constructor(options: SseDecoderOptions = {}) {
    this.#onComment = options.onComment;
  }

  /** True when `end()` found an unterminated line or event and discarded it (per the spec). */
  get discardedAtEnd(): boolean {
    return this.#discardedAtEnd;
  }

  /** Feeds one network chunk; returns the events completed by it, in order. */
  push(chunk: Uint8Array): SseEvent[] {
    if (this.#ended) throw new Error('SseDecoder: push() after end()');
    return this.#feedText(this.#withoutBom(this.#textDecoder.write(chunk)));
  }

  /**
   * Ends the stream. Always returns no events: an event not closed by a blank line is discarded, as the
   * spec requires (see `discardedAtEnd`). It returns an array so `push` and `end` read alike at call sites.
   */
  end(): SseEvent[] {
    if (this.#ended) return [];
    this.#ended = true;
    // Flushing may surface a truncated UTF-8 sequence as U+FFFD; it can only belong to the discarded tail.
    const rest = this.#withoutBom(this.#textDecoder.end());
    const events = this.#feedText(rest);
    this.#discardedAtEnd = this.#partialLine.length > 0 || this.#fieldsSinceDispatch;
    this.#partialLine = '';
    return events;
  }

  /** The stream's text with its first character dropped when that is a byte order mark (the spec ignores one). */
  #withoutBom(text: string): string {
    if (!this.#atStart || text.length === 0) return text;
    this.#atStart = false;
    return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  }

  #feedText(text: string): SseEvent[] {
    // Usually one event per chunk: the array is made by a literal at the first event (a `[]` grown by `push`
    // allocates room for 17 elements per chunk).
    let events: SseEvent[] | undefined;
    let start = 0;
    if (this.#skipLeadingLf && text.length > 0) {
      this.#skipLeadingLf = false;
      if (text.charCodeAt(0) === 10) start = 1;
    }
    // Next CR / LF positions are cached so a stream that never uses one of them is not rescanned per line.
    let nextLf = text.indexOf(LF, start);
    let nextCr = text.indexOf(CR, start);
    while (nextLf !== -1 || nextCr !== -1) {
      let lineEnd: number;
      let next: number;
      if (nextCr === -1 || (nextLf !== -1 && nextLf < nextCr)) {
        lineEnd = nextLf;
        next = nextLf + 1;
      } else {
        lineEnd = nextCr;
        if (nextCr + 1 === text.length) {
          // A CR closing the chunk ends the line now (no waiting for the next chunk); remember to drop a LF.
          this.#skipLeadingLf = true;
          next = nextCr + 1;
        } else {
          next = nextLf === nextCr + 1 ? nextCr + 2 : nextCr + 1;
        }
      }
      let line = text.slice(start, lineEnd);
      if (this.#partialLine.length > 0) {
        line = this.#partialLine + line;
        this.#partialLine = '';
      }
      const event = this.#processLine(line);
      if (event !== undefined) {
        if (events === undefined) events = [event];
        else events.push(event);
      }
      start = next;
      if (nextLf !== -1 && nextLf < start) nextLf = text.indexOf(LF, start);
      if (nextCr !== -1 && nextCr < start) nextCr = text.indexOf(CR, start);
    }
    if (start < text.length) this.#partialLine += text.slice(start);
    return events ?? [];
  }

  #processLine(line: string): SseEvent | undefined {
    if (line.length === 0) return this.#dispatch();
    const colon = line.indexOf(':');
    if (colon === 0) {
      this.comments++;
      this.#onComment?.(line.slice(1));
      return undefined;
    }
    // A `data:` line (nearly every line of an LLM stream) is told by its first five characters, without
    // slicing out the field name and comparing it as a string.
    if (colon === 4 && line.startsWith('data')) {
      const value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
      this.#data = this.#data === undefined ? value : this.#data + LF + value;
      this.#fieldsSinceDispatch = true;
      return undefined;
    }
    let field: string;
    let value: string;
    if (colon === -1) {
      field = line;
      value = '';
    } else {
      field = line.slice(0, colon);
      // One optional space after the colon belongs to the syntax, not to the value.
      value = line.charCodeAt(colon + 1) === 32 ? line.slice(colon + 2) : line.slice(colon + 1);
    }
    switch (field) {
      case 'data':
        this.#data = this.#data === undefined ? value : this.#data + LF + value;
        break;
      case 'event':
        this.#eventType = value;
        break;
      case 'id':
        // The spec ignores ids containing NUL (they could not be sent back in Last-Event-ID).
        if (!value.includes('\0')) this.#lastEventId = value;
        break;
      case 'retry':
        if (/^\d+$/.test(value)) {
          this.#retryInEvent = Number(value);
          this.retry = this.#retryInEvent;
        }
        break;
      default:
        return undefined; // unknown fields are ignored
    }
    this.#fieldsSinceDispatch = true;
    return undefined;
  }

  #dispatch(): SseEvent | undefined {
    const data = this.#data;
    const eventType = this.#eventType;
    const retry = this.#retryInEvent;
    this.#data = undefined;
    this.#eventType = '';
    this.#retryInEvent = undefined;
    this.#fieldsSinceDispatch = false;
    if (data === undefined) return undefined; // no data line: nothing to dispatch
    const event: SseEvent = { data };
    if (eventType.length > 0) event.event = eventType;
    if (this.#lastEventId.length > 0) event.id = this.#lastEventId;
    if (retry !== undefined) event.retry = retry;
    return event;
  }
}
