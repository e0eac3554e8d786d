/**
 * The settlement journal of the gateway users run (`node dist/src/cli.js serve`, started as a process):
 * - a journal directory that cannot be written stops the start with one clear line and a non-zero exit;
 * - settlements of streams running when PostgreSQL stops are on disk before their replies complete and before
 *   `/metrics` counts them, survive `kill -9`, and a new process on the same database and directory bills each once;
 * - a journal that stops taking writes while the database is down too makes the gateway refuse paid requests with a
 *   503 in each caller's shape and `/readyz` not ready, until it can be written again.
 * As root (these tests' user) permission bits stop nothing: the journal is made unwritable by a file where its
 * directory should be, or by the immutable attribute on the directory (see test/helpers/immutable-files.ts).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readdir, utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { readJournalDirectory } from '../../src/billing/settlement-journal.js';
import { BUILT_CLI } from '../helpers/cli-path.js';
import { makeImmutable, makeWritable } from '../helpers/immutable-files.js';
import { startPrivatePostgres } from '../helpers/private-postgres.js';
import { spawnGateway, stopProcess, startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const run = promisify(execFile);

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((each) => each.startsWith(`${name} `));
  return Number(line?.split(' ')[1] ?? Number.NaN);
}

/** A funded account with a key; no free allowance (FREE_TOKENS_PER_DAY=0), so every reply costs money. */
async function fundedKey(harness: TestGateway): Promise<{ accountId: string; key: string }> {
  const { accountId, key } = await harness.createAccountWithKey(undefined, 'enterprise');
  await harness.gateway.storage.billing.credit({
    accountId,
    kind: 'topup',
    amountNano: 100_000_000_000n,
    idempotencyKey: `topup-${accountId}`,
    note: null,
    at: Date.now(),
  });
  return { accountId, key };
}

interface Stream {
  /** Resolves once the reply's headers arrived (the request is admitted and streaming). */
  started: Promise<string>;
  /** Resolves once the whole stream arrived: its request id and whether it finished (`[DONE]`). */
  finished: Promise<{ requestId: string; completed: boolean }>;
}

/** An OpenAI chat stream of ~3 s (paced chunks), read to its end. */
function openaiStream(url: string, key: string): Stream {
  const response = fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'beta-5.4',
      stream: true,
      max_completion_tokens: 200,
      messages: [{ role: 'user', content: 'A story [[sim words=30 chunk-delay=100]]' }],
    }),
  });
  const started = response.then((reply) => {
    if (reply.status !== 200) throw new Error(`stream refused: ${reply.status}`);
    return reply.headers.get('x-request-id')!;
  });
  const finished = response.then(async (reply) => {
    const text = await reply.text();
    return {
      requestId: reply.headers.get('x-request-id')!,
      completed: text.includes('"finish_reason":"') && text.trimEnd().endsWith('data: [DONE]'),
    };
  });
  return { started, finished };
}

/** `tollgate serve` expected to refuse to start: its exit code and what it wrote. */
async function refusedStart(env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  const outcome = await run(process.execPath, [BUILT_CLI, 'serve'], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
    timeout: 30_000,
  }).then(
    () => ({ code: 0, stdout: '', stderr: '' }),
    (error: { code: number; stdout: string; stderr: string }) => error,
  );
  return { code: outcome.code, stdout: outcome.stdout, stderr: outcome.stderr };
}

describe('settlement journal of the running gateway', () => {
  it('refuses to start, in one line and with a non-zero exit, when its journal directory cannot be written', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'tollgate-journal-start-'));
    const immutable = join(directory, 'read-only');
    cleanups.push(async () => {
      await makeWritable([immutable]).catch(() => undefined);
      rmSync(directory, { recursive: true, force: true });
    });
    const env = { PORT: '0', HOST: '127.0.0.1', DATABASE_URL: `sqlite:${join(directory, 'tollgate.db')}` };

    // A file where the directory should be, and a directory below a file.
    writeFileSync(join(directory, 'a-file'), 'not a directory');
    for (const [journal, error] of [
      [join(directory, 'a-file'), 'EEXIST: file already exists'],
      [join(directory, 'a-file', 'journal'), 'ENOTDIR: not a directory'],
    ] as const) {
      const refused = await refusedStart({ ...env, SETTLEMENT_JOURNAL_DIR: journal });
      expect(refused.code).toBe(1);
      expect(refused.stdout).not.toContain('Tollgate listening');
      expect(refused.stderr).toBe(
        `tollgate: SETTLEMENT_JOURNAL_DIR ${journal} cannot hold the settlement journal: cannot create the directory: ${error}, mkdir '${journal}'. Point SETTLEMENT_JOURNAL_DIR at a writable directory on a local disk.\n`,
      );
    }

    // A read-only directory (immutable: root cannot create files there either).
    await run('mkdir', [immutable]);
    await run('chattr', ['+i', immutable]);
    const refused = await refusedStart({ ...env, SETTLEMENT_JOURNAL_DIR: immutable });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      new RegExp(
        `^tollgate: SETTLEMENT_JOURNAL_DIR ${immutable} cannot hold the settlement journal: cannot create a file in it: EPERM: operation not permitted, open '[^']+'\\. Point SETTLEMENT_JOURNAL_DIR at a writable directory on a local disk\\.\\n$`,
      ),
    );
    expect(refused.stderr).not.toMatch(/\n\s+at /);
    await makeWritable([immutable]);
    expect(await readdir(immutable)).toEqual([]);
  }, 60_000);

  it('PostgreSQL stopped under 12 streams, then kill -9: each settlement is on disk before it counts, and a new process bills all 12 once', async () => {
    const cluster = await startPrivatePostgres();
    cleanups.push(() => cluster.destroy());
    const harness = await startTestGateway({ env: { DATABASE_URL: cluster.url, FREE_TOKENS_PER_DAY: '0' } });
    cleanups.push(() => harness.close());
    const journal = harness.gateway.config.settlementJournalDir;
    const { accountId, key } = await fundedKey(harness);
    const url = harness.gateway.url;

    const streams = Array.from({ length: 12 }, () => openaiStream(url, key));
    await Promise.all(streams.map((stream) => stream.started));
    await cluster.stop('immediate');

    // Sampled until every reply has arrived: whatever /metrics counts as journaled is on disk already (a failed
    // write never counts: the run-time test below checks that deterministically).
    const checks: Array<{ counted: number; onDisk: number }> = [];
    let done = false;
    const finished = Promise.all(streams.map((stream) => stream.finished)).finally(() => {
      done = true;
    });
    while (!done) {
      const counted = await metric(url, 'tollgate_settlements_journaled_total');
      checks.push({ counted, onDisk: (await readJournalDirectory(journal)).entries.length });
      await sleep(20);
    }
    const replies = await finished;
    expect(replies.every((reply) => reply.completed)).toBe(true);
    expect(checks.filter(({ counted, onDisk }) => counted > onDisk)).toEqual([]);
    // Every completed reply's settlement was on disk when the reply ended.
    const ids = replies.map((reply) => reply.requestId);
    const onDisk = await readJournalDirectory(journal);
    expect(onDisk.entries.map((entry) => entry.usage.requestId).sort()).toEqual([...ids].sort());
    expect(await metric(url, 'tollgate_settlements_journaled_total')).toBe(12);
    expect(await metric(url, 'tollgate_settlement_journal_unavailable')).toBe(0);
    // The process dies with its journal pending; the database comes back; a new process starts on both.
    const killed = new Promise((resolve) => harness.gateway.process.once('exit', resolve));
    harness.gateway.process.kill('SIGKILL');
    await killed;
    await cluster.start();
    // The dead instance's lock as it is once its stale limit (60 s) has passed, without waiting for it.
    const past = new Date(Date.now() - 120_000);
    for (const name of await readdir(journal))
      if (name.endsWith('.lock')) await utimes(join(journal, name), past, past);
    const logs: string[] = [];
    const restarted = await spawnGateway(harness.env, logs);
    cleanups.push(() => stopProcess(restarted.child));

    // Replayed before it listened: one usage record per completed reply, billed, nothing held, the journal empty.
    const storage = harness.gateway.storage;
    const records = await expect
      .poll(async () => (await storage.usage.listByAccount(accountId, 100).catch(() => [])).length, {
        timeout: 20_000,
        interval: 250,
      })
      .toBe(12)
      .then(() => storage.usage.listByAccount(accountId, 100));
    expect(records.map((record) => record.requestId).sort()).toEqual([...ids].sort());
    expect(records.every((record) => record.status === 'ok' && record.costNano > 0n)).toBe(true);
    const charged = records.reduce((sum, record) => sum + record.costNano, 0n);
    expect(await storage.billing.balance(accountId)).toMatchObject({
      balanceNano: 100_000_000_000n - charged,
      reservedNano: 0n,
    });
    expect(await storage.billing.verifyLedger()).toEqual([]);
    expect((await readJournalDirectory(journal)).entries).toEqual([]);
    const verified = await run(process.execPath, [BUILT_CLI, 'ledger', 'verify', '--json'], {
      env: { ...process.env, ...harness.env },
    });
    expect(JSON.parse(verified.stdout)).toMatchObject({ ok: true, mismatches: [], journal: { pending: [] } });
    expect(logs.join('')).toContain('adopted the settlement journal of an instance that is gone');
  }, 120_000);

  it('a journal that stops taking writes while the database is down: paid requests get 503 in their own shape, /readyz says why, and both recover', async () => {
    const harness = await startTestGateway({ env: { FREE_TOKENS_PER_DAY: '0' } });
    cleanups.push(() => harness.close());
    const url = harness.gateway.url;
    const { accountId, key } = await fundedKey(harness);
    const journal = harness.gateway.config.settlementJournalDir;
    const file = harness.databaseUrl.slice('sqlite:'.length);
    const database = [file, `${file}-wal`];
    cleanups.push(() => makeWritable([...database, journal]));
    expect(await fetch(`${url}/readyz`).then((reply) => reply.json())).toEqual({
      status: 'ready',
      checks: { storage: 'ok', settlement_journal: 'ok' },
    });

    // A stream runs; the database and the journal's directory stop taking writes before it settles.
    const stream = openaiStream(url, key);
    const requestId = await stream.started;
    await makeImmutable(database);
    await run('chattr', ['+i', journal]);
    const reply = await stream.finished;
    expect(reply.completed).toBe(true);
    expect(await metric(url, 'tollgate_settlement_journal_unavailable')).toBe(1);
    expect(await metric(url, 'tollgate_settlement_journal_unwritten')).toBe(1);
    expect(await metric(url, 'tollgate_settlements_journaled_total')).toBe(0);
    expect(await metric(url, 'tollgate_settlement_journal_write_failures_total')).toBeGreaterThan(0);
    // The log says why, once.
    const unavailableLines = () =>
      harness.logs.filter((line) => line.includes('paid requests are refused with 503 until a write succeeds'));
    await expect.poll(() => unavailableLines().length).toBe(1);
    expect(JSON.parse(unavailableLines()[0]!)).toMatchObject({ level: 50, directory: journal, err: { code: 'EPERM' } });

    // The database comes back first: the unwritten settlement goes straight to it, billed.
    await makeWritable(database);
    await expect
      .poll(() => harness.gateway.storage.usage.recordedRequestIds([requestId]), { timeout: 10_000, interval: 100 })
      .toEqual(new Set([requestId]));
    expect(await metric(url, 'tollgate_settlement_journal_unwritten')).toBe(0);

    // The journal still cannot be written: every paid request is refused in its caller's shape, nothing held.
    const message =
      'The settlement journal cannot be written (EPERM); paid requests are refused until it can. Please retry later.';
    const post = (path: string, body: unknown, headers: Record<string, string> = { authorization: `Bearer ${key}` }) =>
      fetch(`${url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
    const chat = await post('/v1/chat/completions', { model: 'beta-5.4', messages: [{ role: 'user', content: 'hi' }] });
    expect([chat.status, chat.headers.get('retry-after')]).toEqual([503, '10']);
    expect(await chat.json()).toEqual({
      error: { message, type: 'server_error', param: null, code: 'settlement_journal_unavailable' },
    });
    const responses = await post('/v1/responses', { model: 'beta-5.4', input: 'hi' });
    expect(responses.status).toBe(503);
    expect(await responses.json()).toEqual({
      error: { message, type: 'server_error', param: null, code: 'settlement_journal_unavailable' },
    });
    const anthropic = await post('/v1/messages', {
      model: 'alpha-sonnet-5',
      max_tokens: 50,
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect([anthropic.status, anthropic.headers.get('retry-after')]).toEqual([529, '10']);
    expect(await anthropic.json()).toEqual({
      type: 'error',
      error: { type: 'overloaded_error', message },
      request_id: anthropic.headers.get('x-request-id'),
    });
    const gemini = await post(
      '/v1beta/models/gamma-3.5-flash:generateContent',
      { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] },
      { 'x-goog-api-key': key },
    );
    expect(gemini.status).toBe(503);
    expect(await gemini.json()).toEqual({
      error: {
        code: 503,
        message,
        status: 'UNAVAILABLE',
        details: [
          {
            '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
            reason: 'SETTLEMENT_JOURNAL_UNAVAILABLE',
            domain: 'tollgate',
          },
          { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '10s' },
        ],
      },
    });
    expect((await harness.gateway.storage.billing.balance(accountId))?.reservedNano).toBe(0n);
    const notReady = await fetch(`${url}/readyz`);
    expect(notReady.status).toBe(503);
    expect(await notReady.json()).toEqual({
      status: 'not_ready',
      checks: { storage: 'ok', settlement_journal: 'not_writable' },
    });
    // The process writes its log asynchronously: the readiness check's line may land just after the reply.
    const why = () =>
      harness.logs
        .filter((line) => line.includes('"check":"settlement_journal"'))
        .map((line) => JSON.parse(line) as { err: { message: string } })
        .at(-1)?.err.message;
    await expect
      .poll(why)
      .toMatch(
        new RegExp(
          `^(writing settlements to|a probe write to) the journal in ${journal} failed: .*EPERM: operation not permitted`,
        ),
      );

    // Writable again: the next probe clears the state; paid requests pass and /readyz is ready.
    await makeWritable([journal]);
    await expect
      .poll(() => fetch(`${url}/readyz`).then((ready) => ready.status), { timeout: 10_000, interval: 100 })
      .toBe(200);
    expect(
      (await post('/v1/chat/completions', { model: 'beta-5.4', messages: [{ role: 'user', content: 'hi' }] })).status,
    ).toBe(200);
    expect(await metric(url, 'tollgate_settlement_journal_unavailable')).toBe(0);
    await expect
      .poll(() => harness.logs.join(''))
      .toContain('settlement journal: writable again; paid requests are admitted again');
    expect(await harness.gateway.storage.billing.verifyLedger()).toEqual([]);
  }, 60_000);
});
