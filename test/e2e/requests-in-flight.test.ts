/**
 * The gateway counts the requests it is handling, from arrival to their response's end (requests-in-flight.ts):
 * SQLite's hot path lets a write commit without waiting for the event loop's check phase only when its request is
 * the only one counted. A request never counted down would turn that off for good; one counted down twice would
 * let writes of concurrent requests go alone. So every way a request can end is checked here over real HTTP,
 * the count back at exactly 0 each time, and the money of an aborted stream still settled.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

/** A bound on waiting for the gateway to see a close, not a timing. */
const BOUND_MS = 10_000;

let harness: TestGateway;
let key: string;
let accountId: string;

beforeAll(async () => {
  harness = await startTestGateway({ env: { FREE_TOKENS_PER_DAY: '0' } });
  ({ key, accountId } = await harness.createAccountWithKey(undefined, 'enterprise'));
  await harness.gateway.storage.billing.credit({ accountId, kind: 'topup', amountNano: parseUsd('1'), idempotencyKey: `t-${accountId}`, note: null, at: Date.now() });
});

afterAll(async () => {
  await harness?.close();
});

const inFlight = () => harness.gateway.requestsInFlight.inFlight;

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + BOUND_MS;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`not within ${BOUND_MS} ms: ${what} (in flight: ${inFlight()})`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Back to none in flight, and still none a little later (a second count-down would show as -1). */
async function noneInFlight(): Promise<void> {
  await until(() => inFlight() === 0, 'no request in flight');
  await new Promise((resolve) => setTimeout(resolve, 50));
  expect(inFlight()).toBe(0);
}

const chat = (content: string, stream: boolean, signal?: AbortSignal) =>
  fetch(`${harness.gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'beta-5.4', messages: [{ role: 'user', content }], stream }),
    ...(signal === undefined ? {} : { signal }),
  });

describe('requests in flight', () => {
  it('a JSON reply, a whole stream, a 400, a 404: each counted while it runs and counted down once', async () => {
    expect(inFlight()).toBe(0);
    const json = await chat('hello', false);
    expect(json.status).toBe(200);
    await json.json();
    await noneInFlight();

    const stream = await chat('a stream [[sim words=20 chunk-delay=30]]', true);
    expect(stream.status).toBe(200);
    const reader = stream.body!.getReader();
    await reader.read();
    expect(inFlight()).toBe(1);
    while (!(await reader.read()).done);
    await noneInFlight();

    const malformed = await fetch(`${harness.gateway.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: '{"model":' });
    expect(malformed.status).toBe(400);
    await malformed.text();
    const missing = await fetch(`${harness.gateway.url}/v1/nowhere`);
    expect(missing.status).toBe(404);
    await missing.text();
    await noneInFlight();
  });

  it('a client that leaves mid-stream: counted down when the connection closes, and the request still settled', async () => {
    const controller = new AbortController();
    const stream = await chat('long one [[sim words=200 chunk-delay=20]]', true, controller.signal);
    const reader = stream.body!.getReader();
    await reader.read();
    expect(inFlight()).toBe(1);
    controller.abort();
    await noneInFlight();
    let row;
    for (let attempt = 0; attempt < 100 && row === undefined; attempt++) {
      row = (await harness.gateway.storage.usage.listByAccount(accountId, 10)).find((candidate) => candidate.status === 'client_disconnected');
      if (row === undefined) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(row).toBeDefined();
    expect(await harness.gateway.storage.billing.balance(accountId)).toMatchObject({ reservedNano: 0n });
    expect(await harness.gateway.storage.billing.verifyLedger()).toEqual([]);
  });

  it('a client that leaves during its request body, and pipelined requests whose connection closes while one waits its turn', async () => {
    const { port } = new URL(harness.gateway.url);
    const open = async () => {
      const socket = connect(Number(port), '127.0.0.1');
      await new Promise<void>((resolve, reject) => {
        socket.once('connect', resolve);
        socket.once('error', reject);
      });
      socket.on('error', () => undefined);
      return socket;
    };
    const head = (length: number) => `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n\r\n`;

    const uploading = await open();
    uploading.write(`${head(100_000)}{"model":"beta-5.4","messages":[`);
    await until(() => inFlight() === 1, 'the upload counted');
    uploading.destroy();
    await noneInFlight();

    // Two requests in one write: Node hands both to the app at once, the second's response queued behind the
    // first's (a slow stream). Closing the connection closes the first response; Node never closes the second.
    const body = (content: string, stream: boolean) => JSON.stringify({ model: 'beta-5.4', messages: [{ role: 'user', content }], stream });
    const slow = body('slow [[sim words=400 chunk-delay=50]]', true);
    const quick = body('quick', false);
    const pipelined = await open();
    const firstBytes = new Promise<void>((resolve) => pipelined.once('data', () => resolve()));
    pipelined.write(`${head(Buffer.byteLength(slow))}${slow}${head(Buffer.byteLength(quick))}${quick}`);
    await firstBytes;
    await until(() => inFlight() === 2, 'both pipelined requests counted');
    pipelined.destroy();
    await noneInFlight();

    // Counted right afterwards: one request alone is 1, not 0 or -1.
    const stream = await chat('after [[sim words=20 chunk-delay=20]]', true);
    const reader = stream.body!.getReader();
    await reader.read();
    expect(inFlight()).toBe(1);
    while (!(await reader.read()).done);
    await noneInFlight();
    expect(await harness.gateway.storage.billing.balance(accountId)).toMatchObject({ reservedNano: 0n });
  });
});
