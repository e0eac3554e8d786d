/**
 * undici-pool.ts loads undici's Pool from its own files: they must be exactly what the package exports, with the
 * request API on it, and a request over loopback must work through it.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as undici from 'undici';
import { expect, it } from 'vitest';
import { Pool, undiciErrors } from './undici-pool.js';

it("is undici's own Pool and error classes", () => {
  expect(Pool).toBe(undici.Pool);
  expect(undiciErrors).toBe(undici.errors);
  expect(undiciErrors.HeadersTimeoutError).toBe(undici.errors.HeadersTimeoutError);
});

it('makes requests over loopback', async () => {
  const server = createServer((request, response) => {
    response.setHeader('content-type', 'application/json');
    response.end(JSON.stringify({ method: request.method, url: request.url }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const pool = new Pool(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { connections: 1 });
  try {
    const response = await pool.request({ method: 'POST', path: '/v1/x', body: '{}' });
    expect(response.statusCode).toBe(200);
    expect(await response.body.json()).toEqual({ method: 'POST', url: '/v1/x' });
  } finally {
    await pool.close();
    await new Promise((resolve) => server.close(resolve));
  }
});
