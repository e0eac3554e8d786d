/**
 * An embedded (SQLite) gateway keeps its live holds in memory and owns its file
 * (docs/decisions/0019-sqlite-holds-in-memory.md), on the shipped gateway process:
 * - what it shows as reserved includes its holds, though the database holds none;
 * - killed with SIGKILL mid-stream and started again, it bills the stream at its last written checkpoint;
 * - a second gateway on the same file refuses to start, while CLI admin commands keep working beside it.
 */
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { promisify } from 'node:util';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILT_CLI } from '../helpers/cli-path.js';
import {
  fundedAccountWithKey,
  spawnGateway,
  startTestGateway,
  stopProcess,
  type TestGateway,
} from '../helpers/test-gateway.js';

const run = promisify(execFile);
const RESERVATION_TTL_MS = 3_000;

let harness: TestGateway;
let databaseFile: string;

beforeAll(async () => {
  harness = await startTestGateway({
    env: {
      RESERVATION_TTL_MS: String(RESERVATION_TTL_MS),
      TOLLGATE_SHORT_TIMERS: '1',
      SWEEP_INTERVAL_MS: '500',
      CHECKPOINT_INTERVAL_MS: '500',
      FREE_TOKENS_PER_DAY: '0',
    },
  });
  databaseFile = harness.databaseUrl.slice('sqlite:'.length);
});

afterAll(async () => {
  await harness?.close();
});

function chat(url: string, key: string, content: string, extra: Record<string, unknown> = {}): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'beta-5.4', messages: [{ role: 'user', content }], ...extra }),
  });
}

/** The request's row in `reservations`, read from outside the gateway: its checkpoint, and the hold it stores. */
function storedRow(requestId: string): { hold: string; output: number; input: number } | undefined {
  const reader = new BetterSqlite3(databaseFile, { readonly: true });
  try {
    return reader
      .prepare(
        `select cast(hold_nano as text) as hold, checkpoint_output_tokens as output, checkpoint_input_tokens as input
         from reservations where request_id = ? and checkpoint_at is not null`,
      )
      .get(requestId) as { hold: string; output: number; input: number } | undefined;
  } finally {
    reader.close();
  }
}

async function account(url: string, key: string) {
  const response = await fetch(`${url}/v1/account`, { headers: { authorization: `Bearer ${key}` } });
  return ((await response.json()) as { balance: { reserved_nano_usd: string; requests_in_flight: number } }).balance;
}

describe('SQLite: live holds in memory, one gateway per file', () => {
  it('restarted after SIGKILL mid-stream, bills the stream at its last checkpoint', async () => {
    const { accountId, key } = await fundedAccountWithKey(harness, '5');
    const settled = await chat(harness.gateway.url, key, 'hi');
    expect(settled.status).toBe(200);
    await settled.arrayBuffer();
    const response = await chat(harness.gateway.url, key, 'Tell a long story [[sim words=400 chunk-delay=50]]', {
      stream: true,
      max_completion_tokens: 800,
    });
    expect(response.status).toBe(200);
    const requestId = response.headers.get('x-request-id')!;
    const reader = response.body!.getReader();
    // Read on (so the gateway keeps delivering) until its periodic batch has written a checkpoint of some output.
    let row = storedRow(requestId);
    while (row === undefined || row.output === 0) {
      expect((await reader.read()).done).toBe(false);
      row = storedRow(requestId);
    }
    // The hold is in the gateway's memory: the row stores none, yet the account shows it held.
    expect(row.hold).toBe('0');
    expect(await harness.gateway.storage.billing.balance(accountId)).toMatchObject({ reservedNano: 0n });
    expect(await account(harness.gateway.url, key)).toMatchObject({ requests_in_flight: 1 });
    expect(BigInt((await account(harness.gateway.url, key)).reserved_nano_usd)).toBeGreaterThan(0n);
    const before = (await harness.gateway.storage.billing.balance(accountId))!.balanceNano;

    const exited = once(harness.gateway.process, 'exit');
    harness.gateway.process.kill('SIGKILL');
    await exited;
    await reader.cancel().catch(() => undefined);
    const last = storedRow(requestId)!;
    expect(last.output).toBeGreaterThanOrEqual(row.output);

    // Started again on the same file: the dead process's lock is waited out, and the sweeper bills the orphaned
    // checkpoint once it expires, exactly as a crashed instance's hold was billed before.
    const restarted = await spawnGateway(harness.env);
    try {
      let record: Awaited<ReturnType<typeof harness.gateway.storage.usage.listByAccount>>[number] | undefined;
      const deadline = Date.now() + RESERVATION_TTL_MS + 10_000;
      while (record === undefined && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        record = (await harness.gateway.storage.usage.listByAccount(accountId, 10)).find(
          (candidate) => candidate.requestId === requestId,
        );
      }
      expect(record).toMatchObject({
        status: 'instance_lost',
        stream: true,
        outputTokens: last.output,
        inputTokens: last.input,
        unbilledNano: 0n,
      });
      // beta-5.4 at list price ($2.50 / $15 per million): free + billed + unbilled is the checkpointed count.
      const cost = BigInt(last.input) * 2_500n + BigInt(last.output) * 15_000n;
      expect(record!.costNano).toBe(cost);
      expect(await harness.gateway.storage.billing.balance(accountId)).toMatchObject({
        balanceNano: before - cost,
        reservedNano: 0n,
      });
      const ledger = await harness.gateway.storage.billing.ledger(accountId, 10);
      expect(ledger.filter((entry) => entry.requestId === requestId).map((entry) => entry.amountNano)).toEqual([-cost]);
      expect(await harness.gateway.storage.billing.verifyLedger()).toEqual([]);
      expect(storedRow(requestId)).toBeUndefined();
      expect(await account(restarted.url, key)).toMatchObject({ requests_in_flight: 0, reserved_nano_usd: '0' });
    } finally {
      await stopProcess(restarted.child);
    }
  });

  it('a second gateway on the same file refuses to start; the CLI works beside the one serving it', async () => {
    const serving = await spawnGateway(harness.env);
    try {
      await expect(spawnGateway(harness.env)).rejects.toThrow(/is served by another gateway/);
      const { accountId } = await fundedAccountWithKey(harness, '1');
      const email = (await harness.gateway.storage.accounts.findById(accountId))!.email;
      const { stdout } = await run(process.execPath, [BUILT_CLI, 'credit', '--email', email, '--usd', '2', '--json'], {
        env: { ...process.env, ...harness.env },
      });
      expect(JSON.parse(stdout)).toMatchObject({ account_id: accountId, balance_nano_usd: '3000000000' });
      expect(await harness.gateway.storage.billing.balance(accountId)).toMatchObject({ balanceNano: 3_000_000_000n });
      expect((await fetch(`${serving.url}/healthz`)).status).toBe(200);
    } finally {
      await stopProcess(serving.child);
    }
  });
});
