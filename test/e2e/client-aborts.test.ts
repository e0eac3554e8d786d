/**
 * A client that goes away in the middle of sending its request body: its doing, not the gateway's. Node ends the
 * request with `aborted` (ECONNRESET), which used to be logged as an internal error at error level (and, once
 * database outages were recognised by their network codes, counted as a database outage).
 */
import { connect } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DashboardClient } from '../helpers/dashboard-client.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const ABORT_LINE = 'client closed the connection during the request body';
/** How long to wait for the gateway to notice a closed socket before calling it hung (a bound, not a timing). */
const HANG_BOUND_MS = 30_000;

let harness: TestGateway;

beforeAll(async () => {
  harness = await startTestGateway();
});

afterAll(async () => {
  await harness?.close();
});

/**
 * Sends the head of a request with a body announced as 100 kB, waits until the gateway is reading the body, sends
 * its first bytes and closes the connection. `Expect: 100-continue` is the signal: Node answers "100 Continue" as
 * it hands the request to the app, and the app (in this process, its hooks needing no I/O on SQLite) is reading
 * the body by the time that answer is read here.
 */
async function abandonUpload(path: string, headers: Record<string, string>): Promise<void> {
  const { port } = new URL(harness.gateway.url);
  const socket = connect(Number(port), '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const head = Object.entries({
    host: `127.0.0.1:${port}`,
    'content-type': 'application/json',
    'content-length': '100000',
    expect: '100-continue',
    ...headers,
  })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  const continued = new Promise<string>((resolve, reject) => {
    let received = '';
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      if (received.includes('\r\n\r\n')) resolve(received);
    });
    socket.once('error', reject);
  });
  socket.write(`POST ${path} HTTP/1.1\r\n${head}\r\n`);
  expect(await continued).toMatch(/^HTTP\/1\.1 100 Continue\r\n/);
  await new Promise<void>((resolve, reject) =>
    socket.write('{"model":"beta-5.4","messages":[', (error) => (error ? reject(error) : resolve())),
  );
  socket.destroy();
}

async function linesWith(text: string, count: number): Promise<string[]> {
  const deadline = Date.now() + HANG_BOUND_MS;
  for (;;) {
    const lines = harness.logs
      .join('')
      .split('\n')
      .filter((line) => line.includes(text));
    if (lines.length >= count || Date.now() > deadline) return lines;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('a client that drops mid-upload', () => {
  it('is logged at info as the client closing the connection, on the OpenAI, Anthropic and dashboard routes, never as an error or an outage', {
    timeout: 2 * HANG_BOUND_MS,
  }, async () => {
    const { key } = await harness.createAccountWithKey();
    const before = harness.logs.length;
    await abandonUpload('/v1/chat/completions', { authorization: `Bearer ${key}` });
    await abandonUpload('/v1/messages', { 'x-api-key': key, 'anthropic-version': '2023-06-01' });
    const visitor = new DashboardClient(harness.gateway.url);
    await visitor.open();
    await abandonUpload('/api/auth/login', {
      cookie: `tg_session=${visitor.cookie!}`,
      'x-csrf-token': visitor.csrfToken!,
    });
    const lines = await linesWith(ABORT_LINE, 3);
    expect(lines).toHaveLength(3);
    for (const line of lines)
      expect(JSON.parse(line)).toMatchObject({ level: 30, reason: 'aborted', reqId: expect.stringMatching(/^req_/) });
    const written = harness.logs.slice(before).map((line) => JSON.parse(line) as { level: number; msg: string });
    expect(written.filter((line) => line.level >= 40)).toEqual([]);
    expect(written.map((line) => line.msg).join('\n')).not.toMatch(/internal error|unavailable/);
    // Nothing was charged and the gateway serves the next request as usual.
    const client = new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
    await expect(
      client.chat.completions.create({ model: 'beta-5.4', messages: [{ role: 'user', content: 'hi' }] }),
    ).resolves.toBeDefined();
  });
});
