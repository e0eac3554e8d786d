import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { ResolveAll } from './guarded-lookup.js';
import { WebhookSender, type WebhookSenderOptions } from './webhook-sender.js';
import { signatureHeader, verifySignature } from './webhook-signature.js';
import { selfSignedCertificate, startWebhookReceiver } from '../../../test/helpers/webhook-receiver.js';

const servers: Server[] = [];
const senders: WebhookSender[] = [];
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
  await Promise.all(senders.splice(0).map((sender) => sender.close()));
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

function sender(overrides: Partial<WebhookSenderOptions> = {}): WebhookSender {
  const created = new WebhookSender({
    policy: { allowHttpLoopback: true },
    maxAttempts: 4,
    baseDelayMs: 20,
    maxDelayMs: 100,
    timeoutMs: 2_000,
    concurrency: 2,
    ...overrides,
  });
  senders.push(created);
  return created;
}

describe('WebhookSender', () => {
  it('retries a failing receiver until it accepts, signing every attempt', async () => {
    const target = await startWebhookReceiver({ statuses: [503, 500, 204] });
    closers.push(() => target.close());
    const body = JSON.stringify({ hello: 'world' });
    const result = await sender().deliver({
      url: `http://127.0.0.1:${target.port}/hook`,
      secret: 'whsec-test',
      body,
      headers: { 'idempotency-key': 'batch-1' },
    });
    expect(result).toEqual({ ok: true, attempts: 3, status: 204 });
    expect(target.received).toHaveLength(3);
    for (const attempt of target.received) {
      expect(attempt.body).toBe(body);
      expect(attempt.headers['idempotency-key']).toBe('batch-1');
      expect(verifySignature(String(attempt.headers['tollgate-signature']), attempt.body, 'whsec-test')).toBe(true);
      expect(verifySignature(String(attempt.headers['tollgate-signature']), attempt.body, 'other')).toBe(false);
    }
  });

  it('gives up after its attempts, and at once on a refusal', async () => {
    const failing = await startWebhookReceiver({ statuses: [500] });
    const refusing = await startWebhookReceiver({ statuses: [400] });
    closers.push(
      () => failing.close(),
      () => refusing.close(),
    );
    const delivery = { secret: 's', body: '{}' };
    expect(await sender({ maxAttempts: 3 }).deliver({ ...delivery, url: `http://127.0.0.1:${failing.port}/` })).toEqual(
      { ok: false, attempts: 3, status: 500, error: 'the receiver answered 500' },
    );
    expect(failing.received).toHaveLength(3);
    const refused = await sender().deliver({ ...delivery, url: `http://127.0.0.1:${refusing.port}/` });
    expect(refused).toMatchObject({ ok: false, attempts: 1, status: 400 });
    expect(refusing.received).toHaveLength(1);
  });

  it('times out a receiver that never answers', async () => {
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    servers.push(silent);
    silent.unref();
    const started = Date.now();
    const result = await sender({ maxAttempts: 2, timeoutMs: 200 }).deliver({
      url: `http://127.0.0.1:${(silent.address() as AddressInfo).port}/`,
      secret: 's',
      body: '{}',
    });
    expect(result).toMatchObject({ ok: false, attempts: 2, status: undefined });
    expect(Date.now() - started).toBeLessThan(2_000);
    silent.closeAllConnections();
  });

  it('connects over TLS to the address its lookup checked, and refuses names resolving to private ones', async () => {
    const tls = selfSignedCertificate(['receiver.test']);
    const target = await startWebhookReceiver({ tls });
    closers.push(() => target.close());
    // A name no real resolver knows: reaching the receiver proves the socket used the checked address, and the
    // certificate check proves TLS still verified the name.
    const resolveAll: ResolveAll = async (hostname) =>
      hostname === 'receiver.test' ? [{ address: '127.0.0.1', family: 4 }] : [{ address: '10.9.9.9', family: 4 }];
    const url = `https://receiver.test:${target.port}/`;
    const allowed = await sender({ resolveAll, ca: tls.cert }).deliver({ url, secret: 's', body: '{}' });
    expect(allowed).toMatchObject({ ok: true, attempts: 1 });
    // Loopback not allowed: the same name is refused before any byte reaches the receiver, and not retried.
    const strict = sender({ resolveAll, ca: tls.cert, policy: { allowHttpLoopback: false } });
    const refused = await strict.deliver({ url, secret: 's', body: '{}' });
    expect(refused).toMatchObject({ ok: false, attempts: 1 });
    expect(refused.ok ? '' : refused.error).toMatch(/loopback/);
    const internal = await strict.deliver({ url: 'https://internal.test/', secret: 's', body: '{}' });
    expect(internal.ok ? '' : internal.error).toMatch(/internal\.test resolves to 10\.9\.9\.9/);
    expect(target.received).toHaveLength(1);
  });

  it('refuses an http URL outside testing without connecting', async () => {
    const result = await sender({ policy: { allowHttpLoopback: false } }).deliver({
      url: 'http://127.0.0.1:1/',
      secret: 's',
      body: '{}',
    });
    expect(result).toMatchObject({ ok: false, attempts: 0 });
  });

  it('keeps at most its concurrency in flight', async () => {
    let inFlight = 0;
    let most = 0;
    const server = createServer((request, response) => {
      inFlight += 1;
      most = Math.max(most, inFlight);
      request.resume();
      setTimeout(() => {
        inFlight -= 1;
        response.end();
      }, 30);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server);
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const limited = sender({ concurrency: 2 });
    const results = await Promise.all(
      Array.from({ length: 8 }, () => limited.deliver({ url, secret: 's', body: '{}' })),
    );
    expect(results.every((result) => result.ok)).toBe(true);
    expect(most).toBe(2);
  });
});

describe('verifySignature', () => {
  const body = '{"data":[]}';
  it('accepts its own header within the tolerance and refuses a stale or altered one', () => {
    const header = signatureHeader('secret', body, 1_000_000);
    expect(header).toMatch(/^t=1000000,v1=[0-9a-f]{64}$/);
    expect(verifySignature(header, body, 'secret', { nowSeconds: 1_000_100 })).toBe(true);
    expect(verifySignature(header, body, 'secret', { nowSeconds: 1_000_301 })).toBe(false);
    expect(verifySignature(header, `${body} `, 'secret', { nowSeconds: 1_000_000 })).toBe(false);
    expect(verifySignature(header.replace('t=1000000', 't=1000001'), body, 'secret', { nowSeconds: 1_000_000 })).toBe(
      false,
    );
    expect(verifySignature('garbage', body, 'secret')).toBe(false);
  });
});
