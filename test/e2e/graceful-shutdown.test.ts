import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccountService } from '../../src/accounts/account-service.js';
import { KeyService } from '../../src/keys/key-service.js';
import { startSimulator } from '../../src/simulator/simulator-server.js';
import { openStorage } from '../../src/storage/open-storage.js';
import type { Storage } from '../../src/storage/types.js';
import { BUILT_CLI } from '../helpers/cli-path.js';

/**
 * SIGTERM to a real `tollgate serve` process while 50 streams are in flight. The CLI is the built one
 * (`npm test` builds it first); TOLLGATE_CLI points elsewhere, e.g. at a build in a temp directory.
 */
const CLI = process.env.TOLLGATE_CLI ?? BUILT_CLI;
const STREAMS = 50;

let simulator: Awaited<ReturnType<typeof startSimulator>>;
const directories: string[] = [];
const children: ChildProcess[] = [];

beforeAll(async () => {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run the build first (npm test does).`);
  simulator = await startSimulator({ port: 0, host: '127.0.0.1' });
});

afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await simulator?.close();
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
});

interface Served {
  child: ChildProcess;
  url: string;
  storage: Storage;
  accountId: string;
  key: string;
  exit: Promise<number | null>;
}

/** A fresh SQLite database with a funded account, and a gateway process serving it. */
async function serve(extraEnv: Record<string, string>): Promise<Served> {
  const directory = mkdtempSync(join(tmpdir(), 'tollgate-shutdown-'));
  directories.push(directory);
  const databaseUrl = `sqlite:${join(directory, 'db.sqlite')}`;
  const storage = await openStorage(databaseUrl);
  await storage.migrate();
  const account = await new AccountService(storage.accounts).create({
    email: 'drain@example.com',
    password: 'correct horse battery staple',
  });
  const { secret } = await new KeyService(storage.apiKeys).create(account.id, account.id, { name: 'drain' });
  await storage.billing.credit({
    accountId: account.id,
    kind: 'topup',
    amountNano: 100_000_000_000n,
    idempotencyKey: 'seed',
    note: null,
    at: Date.now(),
  });

  const child = spawn(process.execPath, [CLI, 'serve'], {
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      OPENAI_BASE_URL: simulator.baseUrls.openai,
      ANTHROPIC_BASE_URL: simulator.baseUrls.anthropic,
      FREE_TOKENS_PER_DAY: '0',
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      ...extraEnv,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  const exit = once(child, 'exit').then(([code]) => code as number | null);
  let output = '';
  child.stdout!.setEncoding('utf8');
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (chunk: string) => {
      output += chunk;
      const match = /listening on (http:\/\/[\d.:]+)/.exec(output);
      if (match) resolve(match[1]!);
    });
    child.once('exit', () => reject(new Error(`gateway exited before listening: ${output}`)));
  });
  return { child, url, storage, accountId: account.id, key: secret, exit };
}

interface StreamResult {
  requestId: string;
  frames: string[];
  /** The connection ended cleanly (not reset). */
  ended: boolean;
}

/**
 * Starts a streaming chat request; `firstFrame` resolves once the first SSE frame arrived (the request is in
 * flight), `done` when the stream is over.
 */
function startStream(
  url: string,
  key: string,
  directive: string,
): { firstFrame: Promise<void>; done: Promise<StreamResult> } {
  let signalFirst: () => void = () => {};
  const firstFrame = new Promise<void>((resolve) => {
    signalFirst = resolve;
  });
  const done = (async (): Promise<StreamResult> => {
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'beta-5.4',
        stream: true,
        max_tokens: 2_000,
        messages: [{ role: 'user', content: `Tell me a story ${directive}` }],
      }),
    });
    expect(response.status).toBe(200);
    const requestId = response.headers.get('x-request-id')!;
    const decoder = new TextDecoder();
    let text = '';
    let ended = true;
    try {
      for await (const chunk of response.body!) {
        text += decoder.decode(chunk as Uint8Array, { stream: true });
        if (text.includes('\n\n')) signalFirst();
      }
    } catch {
      ended = false;
    }
    const frames = text
      .split('\n\n')
      .filter((frame) => frame.trim() !== '')
      .map((frame) => frame.replace(/^data: /, ''));
    return { requestId, frames, ended };
  })().finally(() => signalFirst());
  return { firstFrame, done };
}

/** Every request settled exactly once: one usage row each, no hold left, ledger equal to the balance. */
async function expectSettledOnce(served: Served, requestIds: string[]): Promise<Map<string, string>> {
  const records = await served.storage.usage.listByAccount(served.accountId, 1_000);
  const byRequest = new Map(records.map((record) => [record.requestId, record.status]));
  expect(records).toHaveLength(requestIds.length);
  for (const id of requestIds) expect(byRequest.has(id)).toBe(true);
  const balance = await served.storage.billing.balance(served.accountId);
  expect(balance!.reservedNano).toBe(0n);
  expect(await served.storage.billing.verifyLedger()).toEqual([]);
  const charges = (await served.storage.billing.ledger(served.accountId, 1_000)).filter(
    (entry) => entry.kind === 'usage',
  );
  expect(new Set(charges.map((entry) => entry.requestId)).size).toBe(charges.length);
  for (const charge of charges) expect(requestIds).toContain(charge.requestId);
  return byRequest;
}

describe('graceful shutdown of `tollgate serve`', () => {
  it(`SIGTERM during ${STREAMS} streams and 10 plain requests: every one finishes, each is settled once, the process exits 0`, async () => {
    const served = await serve({ SHUTDOWN_GRACE_MS: '60000' });
    try {
      const streams = Array.from({ length: STREAMS }, () =>
        startStream(served.url, served.key, '[[sim chunk-delay=60 words=25]]'),
      );
      await Promise.all(streams.map((stream) => stream.firstFrame));
      // Non-stream requests whose vendor answers only after the signal: their responses must still go out.
      const plain = Array.from({ length: 10 }, () =>
        fetch(`${served.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${served.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            model: 'beta-5.4',
            max_tokens: 2_000,
            messages: [{ role: 'user', content: 'Hi [[sim slow-first-byte delay=1500]]' }],
          }),
        }).then(async (response) => ({
          status: response.status,
          requestId: response.headers.get('x-request-id')!,
          body: (await response.json()) as { choices?: unknown[] },
        })),
      );
      // All 60 are being handled (the gateway's own gauge) before the signal goes.
      await expect
        .poll(
          async () =>
            /^tollgate_in_flight_requests (\d+)$/m.exec(await (await fetch(`${served.url}/metrics`)).text())?.[1],
          { timeout: 10_000 },
        )
        .toBe(String(STREAMS + 10 + 1));
      served.child.kill('SIGTERM');

      const results = await Promise.all(streams.map((stream) => stream.done));
      for (const result of results) {
        expect(result.ended).toBe(true);
        expect(result.frames.at(-1)).toBe('[DONE]');
        const chunks = result.frames
          .slice(0, -1)
          .map((frame) => JSON.parse(frame) as { choices: Array<{ finish_reason: string | null }> });
        expect(chunks.some((chunk) => chunk.choices[0]?.finish_reason === 'stop')).toBe(true);
      }
      const plainResults = await Promise.all(plain);
      for (const result of plainResults) {
        expect(result.status).toBe(200);
        expect(result.body.choices).toHaveLength(1);
      }
      expect(await served.exit).toBe(0);

      const statuses = await expectSettledOnce(
        served,
        [...results, ...plainResults].map((result) => result.requestId),
      );
      expect([...statuses.values()].every((status) => status === 'ok')).toBe(true);
      // Nothing is listening any more: the port was closed on SIGTERM.
      await expect(fetch(`${served.url}/healthz`)).rejects.toThrow();
    } finally {
      await served.storage.close();
    }
  });

  it('when the grace period ends first, every stream ends with a well-formed error and is still settled once', async () => {
    const served = await serve({ SHUTDOWN_GRACE_MS: '300' });
    try {
      // Replies that would take well over a minute: only the grace period can end them.
      const streams = Array.from({ length: STREAMS }, () =>
        startStream(served.url, served.key, '[[sim chunk-delay=400 words=400]]'),
      );
      await Promise.all(streams.map((stream) => stream.firstFrame));
      served.child.kill('SIGTERM');

      const results = await Promise.all(streams.map((stream) => stream.done));
      for (const result of results) {
        expect(result.ended).toBe(true);
        expect(result.frames.at(-1)).toBe('[DONE]');
        const error = JSON.parse(result.frames.at(-2)!) as { error: { type: string; code: string; message: string } };
        expect(error.error).toMatchObject({ type: 'server_error', code: 'shutting_down' });
        // Every frame before it is a complete chunk.
        for (const frame of result.frames.slice(0, -2)) expect(() => JSON.parse(frame)).not.toThrow();
      }
      expect(await served.exit).toBe(0);

      await expectSettledOnce(
        served,
        results.map((result) => result.requestId),
      );
      // The delivered part was charged: each stream got some text before the cut.
      const charges = (await served.storage.billing.ledger(served.accountId, 1_000)).filter(
        (entry) => entry.kind === 'usage',
      );
      expect(charges).toHaveLength(STREAMS);
      for (const charge of charges) expect(charge.amountNano).toBeLessThan(0n);
    } finally {
      await served.storage.close();
    }
  });

  it('SIGTERM after its log pipe was closed (a log shipper gone): it still drains and exits 0, no write EPIPE crash', async () => {
    // LOG_LEVEL=info: a line per request, so the drained requests write to the closed pipe too.
    const served = await serve({ SHUTDOWN_GRACE_MS: '60000', LOG_LEVEL: 'info' });
    try {
      const streams = Array.from({ length: 5 }, () =>
        startStream(served.url, served.key, '[[sim chunk-delay=60 words=25]]'),
      );
      await Promise.all(streams.map((stream) => stream.firstFrame));
      // The reading end goes away: every later write of the gateway to stdout fails with EPIPE.
      served.child.stdout!.destroy();
      served.child.kill('SIGTERM');
      const results = await Promise.all(streams.map((stream) => stream.done));
      for (const result of results) {
        expect(result.ended).toBe(true);
        expect(result.frames.at(-1)).toBe('[DONE]');
        expect(result.frames.some((frame) => frame.includes('"finish_reason":"stop"'))).toBe(true);
      }
      expect(await served.exit).toBe(0);
      const statuses = await expectSettledOnce(
        served,
        results.map((result) => result.requestId),
      );
      expect([...statuses.values()].every((status) => status === 'ok')).toBe(true);
    } finally {
      await served.storage.close();
    }
  });
});
