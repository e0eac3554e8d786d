/**
 * Claude Code's WebSearch tool through the gateway on alpha: the simulator makes the model call WebSearch, Claude
 * Code then asks the model to search with Anthropic's `web_search_20250305` server tool, reads the
 * `web_search_tool_result` blocks the gateway relays, and hands the pages back to the conversation. Every call it
 * makes must succeed, and the search is billed on the usage record.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import { AGENT_TEST_TIMEOUT_MS, expectAllCallsSucceeded, runAgent } from '../helpers/agent-cli.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

let harness: TestGateway;
let key: string;
let accountId: string;
let workDir: string;
let home: string;

beforeAll(async () => {
  harness = await startTestGateway({ demo: true });
  ({ key, accountId } = await harness.createAccountWithKey());
  // Searches are billed in money, never from the free allowance.
  await harness.gateway.storage.billing.credit({
    accountId,
    kind: 'topup',
    amountNano: parseUsd('1'),
    idempotencyKey: `t-${accountId}`,
    note: null,
    at: Date.now(),
  });
  workDir = mkdtempSync(join(tmpdir(), 'tollgate-claude-search-work-'));
  home = mkdtempSync(join(tmpdir(), 'tollgate-claude-search-home-'));
}, 60_000);

afterAll(async () => {
  await harness?.close();
  for (const directory of [workDir, home])
    if (directory !== undefined) rmSync(directory, { recursive: true, force: true });
});

it(
  'searches the web with its WebSearch tool on alpha, and the search is recorded',
  async () => {
    const directive = `[[sim tool=WebSearch args=${encodeURIComponent(JSON.stringify({ query: 'harbour bridge toll' }))}]]`;
    const from = harness.logs.length;
    const run = await runAgent(
      'claude',
      [
        '-p',
        `Look up the harbour bridge toll on the web. ${directive}`,
        '--model',
        'alpha-sonnet-5',
        '--allowedTools',
        'WebSearch',
        '--output-format',
        'stream-json',
        '--verbose',
      ],
      workDir,
      // WebSearch is one of the tools Claude Code loads through tool search by default; loaded up front, the
      // simulator's directive can name it on the first turn.
      { HOME: home, ANTHROPIC_BASE_URL: harness.gateway.url, ANTHROPIC_API_KEY: key, ENABLE_TOOL_SEARCH: 'false' },
    );
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map(
        (line) =>
          JSON.parse(line) as {
            type: string;
            message?: { content?: Array<{ type: string; name?: string; content?: unknown }> };
          },
      );
    const blocks = lines.flatMap((line) => line.message?.content ?? []);
    expect(blocks.some((block) => block.type === 'tool_use' && block.name === 'WebSearch')).toBe(true);
    // The tool's result names the pages the search found (the simulator's example.com pages).
    const result = blocks.find((block) => block.type === 'tool_result');
    expect(JSON.stringify(result?.content)).toContain('https://example.com/');
    await harness.flushLogs();
    expectAllCallsSucceeded(harness, from, '/v1/messages');
    const records = await harness.gateway.storage.usage.listByAccount(accountId, 20);
    expect(records.some((record) => (record.webSearchRequests ?? 0) > 0)).toBe(true);
  },
  AGENT_TEST_TIMEOUT_MS,
);
