import type { CanonicalEvent } from '../canonical/events.js';

/**
 * A non-stream reply's events: the body is read (on first use) into one array. Readers that know this class
 * take the array with one await instead of an async-generator round trip per event, which was a large share
 * of what every non-stream request allocated; others iterate it like any event stream, with the same errors
 * at the same point (the first `next()`).
 */
export class WholeReply implements AsyncIterable<CanonicalEvent> {
  private reading: Promise<readonly CanonicalEvent[]> | undefined;
  private read: (() => Promise<readonly CanonicalEvent[]>) | undefined;
  /** The events, once the body has been read (undefined before, and when reading failed). */
  ready: readonly CanonicalEvent[] | undefined;

  constructor(read: () => Promise<readonly CanonicalEvent[]>) {
    this.read = read;
  }

  /** A reply whose events are already known. */
  static of(events: readonly CanonicalEvent[]): WholeReply {
    const reply = new WholeReply(() => Promise.resolve(events));
    reply.ready = events;
    reply.reading = Promise.resolve(events);
    reply.read = undefined;
    return reply;
  }

  /** Reads the body (once) and resolves with its events. */
  all(): Promise<readonly CanonicalEvent[]> {
    if (this.reading === undefined) {
      const read = this.read!;
      this.read = undefined;
      this.reading = read().then((events) => {
        this.ready = events;
        return events;
      });
    }
    return this.reading;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<CanonicalEvent, void, undefined> {
    yield* await this.all();
  }
}
