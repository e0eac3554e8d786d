import { connect } from 'node:net';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { drainAndClose, registerShutdownHandling, ShutdownState } from './graceful-shutdown.js';

describe('ShutdownState', () => {
  it('counts running handlers; ending one twice counts once', async () => {
    const state = new ShutdownState();
    const first = state.begin();
    const second = state.begin();
    expect(state.inFlight).toBe(2);
    first();
    first();
    expect(state.inFlight).toBe(1);
    const drained = state.whenDrained(60_000);
    second();
    expect(await drained).toBe(true);
    expect(state.inFlight).toBe(0);
  });

  it('whenDrained resolves false when handlers outlive the timeout', async () => {
    const state = new ShutdownState();
    const end = state.begin();
    expect(await state.whenDrained(20)).toBe(false);
    end();
    expect(await state.whenDrained(20)).toBe(true);
  });

  it('cutting aborts the shared signal with a shutting_down error', () => {
    const state = new ShutdownState();
    expect(state.closing).toBe(false);
    state.startClosing();
    expect(state.closing).toBe(true);
    expect(state.signal.aborted).toBe(false);
    state.cutInFlight();
    expect(state.signal.aborted).toBe(true);
    expect(state.signal.reason).toMatchObject({ code: 'shutting_down', status: 503 });
  });

  it('aborts the registered in-flight controllers with the same reason, and a late one at once', () => {
    const state = new ShutdownState();
    const running = new AbortController();
    const finished = new AbortController();
    state.inFlightAborts.add(running);
    state.inFlightAborts.add(finished);
    state.inFlightAborts.delete(finished);
    state.cutInFlight();
    expect(running.signal.reason).toBe(state.signal.reason);
    expect(finished.signal.aborted).toBe(false);
    const late = new AbortController();
    state.inFlightAborts.add(late);
    expect(late.signal.reason).toBe(state.signal.reason);
  });
});

describe('registerShutdownHandling and drainAndClose', () => {
  async function appWith(state: ShutdownState) {
    const app = Fastify();
    registerShutdownHandling(app, state);
    app.post('/v1/messages', { config: { protocol: 'anthropic' } }, async () => ({ ok: true }));
    app.get('/slow', async (request) => {
      // Like a stream: runs until its upstream ends, or the grace period cuts it.
      const controller = new AbortController();
      request.server.inFlightAborts.add(controller);
      await new Promise<void>((resolve) =>
        controller.signal.addEventListener('abort', () => resolve(), { once: true }),
      );
      return { cut: (controller.signal.reason as { code: string }).code };
    });
    return app;
  }

  it('answers requests arriving while closing with 503 shutting_down in the route’s shape and connection: close', async () => {
    const state = new ShutdownState();
    const app = await appWith(state);
    state.startClosing();
    const response = await app.inject({ method: 'POST', url: '/v1/messages', payload: {} });
    expect(response.statusCode).toBe(529);
    expect(response.headers.connection).toBe('close');
    expect(response.json()).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });
    await app.close();
  });

  it('waits for a running handler, cuts it when the grace period ends, and closes once it is done', async () => {
    const state = new ShutdownState();
    const app = await appWith(state);
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    const slow = fetch(`${url}/slow`).then((response) => response.json());
    await expect.poll(() => state.inFlight).toBe(1);
    await drainAndClose(app, state, { graceMs: 50 });
    expect(await slow).toEqual({ cut: 'shutting_down' });
    expect(state.inFlight).toBe(0);
  });

  it('counts a pipelined request done when its connection closes while its response waits its turn', async () => {
    const state = new ShutdownState();
    const app = await appWith(state);
    app.get('/quick', async () => ({ ok: true }));
    const url = new URL(await app.listen({ port: 0, host: '127.0.0.1' }));
    const socket = connect(Number(url.port), '127.0.0.1');
    socket.on('error', () => undefined);
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    // Two requests in one write: the quick one's handler is done at once, its response queued behind the slow one's.
    socket.write(`GET /slow HTTP/1.1\r\nhost: ${url.host}\r\n\r\nGET /quick HTTP/1.1\r\nhost: ${url.host}\r\n\r\n`);
    await expect.poll(() => state.inFlight).toBe(2);
    socket.destroy();
    // The slow handler still runs (until it is cut); the queued response's request is over.
    await expect.poll(() => state.inFlight).toBe(1);
    state.cutInFlight();
    await expect.poll(() => state.inFlight).toBe(0);
    await app.close();
  });
});
