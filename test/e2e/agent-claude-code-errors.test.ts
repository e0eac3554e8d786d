/**
 * Claude Code (the real CLI, pinned in test/agents) told why the gateway refuses it, configured only as its users
 * configure it (ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY, a fresh HOME, `-p`). A request no retry can fix must fail
 * at once with its reason: Claude Code retries a 401 or 403 for minutes unless the reply says `x-should-retry:
 * false`, and shows an exhausted balance as a failed login unless the body names it as a billing error. A key's
 * reached spend limit comes as Anthropic's own (a 400 `billing_error`), which it prints as it is.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import {
  AGENT_TEST_TIMEOUT_MS as TEST_TIMEOUT_MS,
  requestsSince,
  runAgent,
  type AgentRun,
} from '../helpers/agent-cli.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

/** Far below what retries take (about 14 attempts over 194 s without the header), above a slow CLI start. */
const FAILS_FAST_MS = 10_000;

let harness: TestGateway;
let workDir: string;
let home: string;

beforeAll(async () => {
  // No free tokens: a new account's $0 balance covers nothing.
  harness = await startTestGateway({ demo: true, env: { FREE_TOKENS_PER_DAY: '0' } });
  workDir = mkdtempSync(join(tmpdir(), 'tollgate-claude-errors-work-'));
  home = mkdtempSync(join(tmpdir(), 'tollgate-claude-errors-home-'));
}, 60_000);

afterAll(async () => {
  await harness?.close();
  for (const directory of [workDir, home])
    if (directory !== undefined) rmSync(directory, { recursive: true, force: true });
});

async function claude(key: string): Promise<AgentRun & { elapsedMs: number }> {
  const started = performance.now();
  const run = await runAgent('claude', ['-p', 'Say hi to the toll gate.', '--model', 'alpha-sonnet-5'], workDir, {
    HOME: home,
    ANTHROPIC_BASE_URL: harness.gateway.url,
    ANTHROPIC_API_KEY: key,
  });
  return { ...run, elapsedMs: performance.now() - started };
}

describe('Claude Code refused by the gateway', () => {
  it(
    'fails fast with the 401 text when its key is revoked',
    async () => {
      const { key, keyId } = await harness.createAccountWithKey();
      const revoked = await fetch(`${harness.gateway.url}/v1/keys/${keyId}`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${key}` },
      });
      expect(revoked.status).toBe(200);
      const from = harness.logs.length;
      const run = await claude(key);
      const output = run.stdout + run.stderr;
      expect(run.code, output).not.toBe(0);
      expect(output).toMatch(/revoked/);
      expect(run.elapsedMs, output).toBeLessThan(FAILS_FAST_MS);
      await harness.flushLogs();
      const messages = requestsSince(harness, from).filter((call) => call.url === '/v1/messages');
      // One try, never a retry loop.
      expect(messages.map((call) => call.status)).toEqual([401]);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'shows an exhausted balance as a billing error, not a failed login, and does not retry',
    async () => {
      const { key } = await harness.createAccountWithKey();
      const from = harness.logs.length;
      const run = await claude(key);
      const output = run.stdout + run.stderr;
      expect(run.code, output).not.toBe(0);
      expect(output).toMatch(/credit balance is too low/i);
      expect(output).not.toMatch(/Failed to authenticate|\/login/);
      expect(run.elapsedMs, output).toBeLessThan(FAILS_FAST_MS);
      await harness.flushLogs();
      const messages = requestsSince(harness, from).filter((call) => call.url === '/v1/messages');
      expect(messages.map((call) => call.status)).toEqual([403]);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "shows a key's reached spend limit with its amount and reset, not a failed login, and does not retry",
    async () => {
      const { key: fullKey, accountId } = await harness.createAccountWithKey();
      await harness.gateway.storage.billing.credit({
        accountId,
        kind: 'topup',
        amountNano: parseUsd('5'),
        idempotencyKey: `spend-limit-${accountId}`,
        note: null,
        at: Date.now(),
      });
      // A limit far below what any Claude Code request may cost: the account could pay, the key may not.
      const created = await fetch(`${harness.gateway.url}/v1/keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${fullKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'capped', spend_limit: { usd: '0.000001', period: 'day' } }),
      });
      expect(created.status).toBe(201);
      const { key } = (await created.json()) as { key: string };
      const from = harness.logs.length;
      const run = await claude(key);
      const output = run.stdout + run.stderr;
      expect(run.code, output).not.toBe(0);
      expect(output).toMatch(/You have reached your specified API usage limits/);
      expect(output).toMatch(/spend limit of \$0\.000001 per day \(UTC\) is reached/);
      expect(output).toMatch(/resets at \d{4}-\d{2}-\d{2}T00:00:00\.000Z/);
      expect(output).not.toMatch(/Failed to authenticate|\/login|credit balance/i);
      expect(run.elapsedMs, output).toBeLessThan(FAILS_FAST_MS);
      await harness.flushLogs();
      const messages = requestsSince(harness, from).filter((call) => call.url === '/v1/messages');
      expect(messages.map((call) => call.status)).toEqual([400]);
    },
    TEST_TIMEOUT_MS,
  );
});
