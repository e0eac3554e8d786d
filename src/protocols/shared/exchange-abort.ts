type AbortListener = Parameters<AbortSignal['addEventListener']>[1];
type AddOptions = Parameters<AbortSignal['addEventListener']>[2];
type RemoveOptions = Parameters<AbortSignal['removeEventListener']>[2];

/** Where an exchange registers its controller while it runs (add when it starts, delete when its response closes). */
export interface InFlightAborts {
  add(controller: Abortable): void;
  delete(controller: Abortable): void;
}

/** An exchange's abort: an AbortController, or anything aborted the same way (ExchangeAbort below). */
export interface Abortable {
  abort(reason?: unknown): void;
}

/**
 * The abort signal of one exchange (its client went away, or a shutdown's grace period ended), used in place of
 * an AbortController, which every model request made. Node 20 builds an AbortSignal as an EventTarget whose
 * prototype is then changed, with two Maps, and its listeners go through EventTarget's option handling: under
 * callgrind, one controller with one listener added and removed (what undici does with the signal of each
 * upstream request) cost ~48k instructions, this class ~0.4k.
 *
 * It is the controller and its signal in one object, and implements what the request path asks of a signal:
 * `aborted`, `reason`, `throwIfAborted`, and `abort` listeners, duck-typed by undici's request option and
 * timers/promises' `delay`. Aborting sets the reason (an `AbortError` DOMException by default, as
 * AbortController's), then calls each listener once with an `abort` Event. It is not a real AbortSignal: give
 * it to nothing that checks the brand (fetch's Request, `AbortSignal.any`).
 */
export class ExchangeAbort implements AbortSignal {
  aborted = false;
  reason: unknown = undefined;
  onabort: AbortSignal['onabort'] = null;
  /** Usually one (undici's, while the upstream request runs); an array only when a second one comes. */
  private listeners: AbortListener | AbortListener[] | undefined;

  /** As AbortController's: the signal to hand out (this object). */
  get signal(): AbortSignal {
    return this;
  }

  abort(reason?: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason === undefined ? new DOMException('This operation was aborted', 'AbortError') : reason;
    const listeners = this.listeners;
    this.listeners = undefined;
    const event = new Event('abort');
    if (listeners !== undefined) {
      for (const listener of Array.isArray(listeners) ? listeners : [listeners]) this.call(listener, event);
    }
    const onabort = this.onabort;
    if (onabort !== null) this.call((abortEvent: Event) => onabort.call(this, abortEvent), event);
  }

  throwIfAborted(): void {
    if (this.aborted) throw this.reason;
  }

  addEventListener(type: string, listener: AbortListener | null, _options?: AddOptions): void {
    // Once aborted, it never fires again (as an EventTarget's signal); a listener given twice is kept once.
    if (type !== 'abort' || listener === null || this.aborted) return;
    const listeners = this.listeners;
    if (listeners === undefined) this.listeners = listener;
    else if (!Array.isArray(listeners)) {
      if (listeners !== listener) this.listeners = [listeners, listener];
    } else if (!listeners.includes(listener)) listeners.push(listener);
  }

  removeEventListener(type: string, listener: AbortListener | null, _options?: RemoveOptions): void {
    if (type !== 'abort' || listener === null) return;
    const listeners = this.listeners;
    if (listeners === listener) this.listeners = undefined;
    else if (Array.isArray(listeners)) {
      const index = listeners.indexOf(listener);
      if (index >= 0) listeners.splice(index, 1);
    }
  }

  /** Only `abort` events mean anything here: they abort it (with the default reason). */
  dispatchEvent(event: Event): boolean {
    if (event.type === 'abort') this.abort();
    return true;
  }

  /** A listener's error does not stop the others: it is thrown on its own, as an EventTarget reports it. */
  private call(listener: AbortListener, event: Event): void {
    try {
      if (typeof listener === 'function') listener.call(this, event);
      else listener.handleEvent(event);
    } catch (error) {
      queueMicrotask(() => {
        throw error;
      });
    }
  }
}
