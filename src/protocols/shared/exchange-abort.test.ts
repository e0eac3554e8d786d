import { once } from 'node:events';
import { setTimeout as delay } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { createServer, type Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { ExchangeAbort } from './exchange-abort.js';

describe('ExchangeAbort', () => {
  let server: Server | undefined;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
    server = undefined;
  });

  it('aborts once, with an AbortError by default, calling each listener once', () => {
    const abort = new ExchangeAbort();
    const calls: string[] = [];
    const first = (event: Event) => calls.push(`first ${event.type}`);
    abort.signal.addEventListener('abort', first);
    abort.signal.addEventListener('abort', first);
    abort.signal.addEventListener('abort', { handleEvent: () => calls.push('object') });
    expect(abort.signal.aborted).toBe(false);
    expect(() => abort.signal.throwIfAborted()).not.toThrow();
    abort.abort();
    abort.abort(new Error('later'));
    expect(calls).toEqual(['first abort', 'object']);
    expect(abort.signal.aborted).toBe(true);
    expect(abort.signal.reason).toBeInstanceOf(DOMException);
    expect((abort.signal.reason as DOMException).name).toBe('AbortError');
    expect(() => abort.signal.throwIfAborted()).toThrow(DOMException);
  });

  it('keeps the reason it was given, and does not call removed listeners', () => {
    const abort = new ExchangeAbort();
    const reason = new Error('shutting down');
    const calls: number[] = [];
    const one = () => calls.push(1);
    const two = () => calls.push(2);
    abort.addEventListener('abort', one);
    abort.addEventListener('abort', two);
    abort.removeEventListener('abort', one);
    abort.abort(reason);
    expect(calls).toEqual([2]);
    expect(abort.reason).toBe(reason);
  });

  it('a throwing listener does not stop the others', async () => {
    const abort = new ExchangeAbort();
    const calls: number[] = [];
    const errors: unknown[] = [];
    const onError = (error: unknown) => errors.push(error);
    process.on('uncaughtException', onError);
    try {
      abort.addEventListener('abort', () => {
        throw new Error('listener failed');
      });
      abort.addEventListener('abort', () => calls.push(2));
      abort.abort();
      await delay(5);
    } finally {
      process.off('uncaughtException', onError);
    }
    expect(calls).toEqual([2]);
    expect(errors).toHaveLength(1);
  });

  it("ends timers/promises' delay and events.once as an AbortSignal does", async () => {
    const abort = new ExchangeAbort();
    const waiting = delay(60_000, undefined, { signal: abort.signal });
    const onced = once(abort.signal, 'abort');
    abort.abort();
    await expect(waiting).rejects.toMatchObject({ name: 'AbortError' });
    await expect(onced).resolves.toHaveLength(1);
  });

  it("aborts an undici request in flight, with the abort's reason, and undici leaves no listener behind", async () => {
    server = createServer((incoming, response) => {
      response.writeHead(200);
      if (incoming.method === 'HEAD') response.end();
      else response.write('started');
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as { port: number };
    const dispatcher = new Agent();
    try {
      // A request that completes removes undici's listener.
      const added: unknown[] = [];
      const removed: unknown[] = [];
      const done = new (class extends ExchangeAbort {
        override addEventListener(...args: Parameters<ExchangeAbort['addEventListener']>): void {
          added.push(args[1]);
          super.addEventListener(...args);
        }
        override removeEventListener(...args: Parameters<ExchangeAbort['removeEventListener']>): void {
          removed.push(args[1]);
          super.removeEventListener(...args);
        }
      })();
      const fine = await request(`http://127.0.0.1:${port}/`, { dispatcher, signal: done.signal, method: 'HEAD' });
      await fine.body.dump();
      expect(fine.statusCode).toBe(200);
      expect(added).toHaveLength(1);
      expect(removed).toEqual(added);
      const abort = new ExchangeAbort();
      const reason = new Error('client gone');
      const pending = request(`http://127.0.0.1:${port}/`, { dispatcher, signal: abort.signal });
      const response = await pending;
      const body = response.body.text();
      abort.abort(reason);
      await expect(body).rejects.toBe(reason);
    } finally {
      await dispatcher.close().catch(() => {});
    }
  });
});
