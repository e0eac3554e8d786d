/**
 * Anthropic's server tools through the gateway, with the official Anthropic SDK: web search on alpha whole and
 * streamed (server_tool_use, web_search_tool_result, cited text, `usage.server_tool_use`), the results sent back
 * intact in the next turn (the simulator refuses altered encrypted content), each search billed at $10 per 1,000
 * on top of the tokens and kept on the usage record (SQLite and PostgreSQL) and in `GET /v1/usage/requests`, the
 * hold covering every search a reply may make, and 400s before anything is held: a family with no equivalent
 * (delta) and malformed tool parameters.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import { startSimulator } from '../../src/simulator/simulator-server.js';
import { startRecordingProxy, type RecordingProxy } from '../helpers/recording-proxy.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const MODEL = 'alpha-sonnet-5';
const SEARCH_NANO = 10_000_000n;
const WEB_SEARCH = { type: 'web_search_20250305' as const, name: 'web_search' as const, max_uses: 3 };

let simulator: Awaited<ReturnType<typeof startSimulator>>;
/** Between the gateway and the simulator's Anthropic: what alpha was sent. */
let proxy: RecordingProxy;
let harness: TestGateway;
let client: Anthropic;
let accountId: string;
let apiKey: string;

async function balance(): Promise<bigint> {
  return (await harness.gateway.storage.billing.balance(accountId))!.balanceNano;
}

/** alpha-sonnet-5: $3/M in, $15/M out; no cache in these prompts. */
function tokenCost(usage: Anthropic.Usage): bigint {
  return BigInt(usage.input_tokens) * 3_000n + BigInt(usage.output_tokens) * 15_000n;
}

describe.each([{ database: 'sqlite' }, { database: 'postgres' }])('server tools on $database', ({ database }) => {
  beforeAll(async () => {
    simulator = await startSimulator();
    proxy = await startRecordingProxy(simulator.url);
    harness = await startTestGateway({
      postgres: database === 'postgres',
      env: {
        FREE_TOKENS_PER_DAY: '0',
        ANTHROPIC_BASE_URL: proxy.url + new URL(simulator.baseUrls.anthropic).pathname,
      },
    });
    const created = await harness.createAccountWithKey(
      `server-tools-${database}-${Date.now()}@example.com`,
      'enterprise',
    );
    accountId = created.accountId;
    apiKey = created.key;
    await harness.gateway.storage.billing.credit({
      accountId,
      kind: 'topup',
      amountNano: parseUsd('5'),
      idempotencyKey: `t-${accountId}`,
      note: null,
      at: Date.now(),
    });
    client = new Anthropic({ apiKey: created.key, baseURL: harness.gateway.url, maxRetries: 0 });
  });

  afterAll(async () => {
    await harness?.close();
    await proxy?.close();
    await simulator?.close();
  });

  /** The usage record of the latest request, as storage keeps it and as `GET /v1/usage/requests` shows it. */
  async function expectRecordedSearches(searches: number): Promise<void> {
    const [record] = await harness.gateway.storage.usage.listByAccount(accountId, 1);
    expect(record).toMatchObject({ webSearchRequests: searches, serverToolNano: BigInt(searches) * SEARCH_NANO });
    const response = await fetch(`${harness.gateway.url}/v1/usage/requests?limit=1`, {
      headers: { authorization: `Bearer ${apiKey}` },
    });
    const { data } = (await response.json()) as { data: Array<Record<string, unknown>> };
    expect(data[0]).toMatchObject({
      web_search_requests: searches,
      web_fetch_requests: 0,
      server_tool_cost_nano_usd: String(BigInt(searches) * SEARCH_NANO),
      cost_nano_usd: record!.costNano.toString(),
    });
    // The request's ledger line names its searches and their cost beside the whole charge.
    const ledger = await fetch(`${harness.gateway.url}/v1/account/ledger?limit=1`, {
      headers: { authorization: `Bearer ${apiKey}` },
    });
    const { data: lines } = (await ledger.json()) as { data: Array<Record<string, unknown>> };
    expect(lines[0]).toMatchObject({
      kind: 'usage',
      request_id: record!.requestId,
      amount_nano_usd: String(-record!.costNano),
      web_search_requests: searches,
      server_tool_cost_nano_usd: String(BigInt(searches) * SEARCH_NANO),
    });
  }

  describe('web search on alpha', () => {
    it('passes the search, its results and citations through, and bills the search on top of the tokens', async () => {
      const before = await balance();
      const message = await client.messages.create({
        model: MODEL,
        max_tokens: 60,
        tools: [WEB_SEARCH],
        messages: [{ role: 'user', content: 'What is the toll on the harbour bridge today?' }],
      });
      const types = message.content.map((block) => block.type);
      expect(types.slice(0, 3)).toEqual(['server_tool_use', 'web_search_tool_result', 'text']);
      await expectRecordedSearches(1);
      const [call, result, text] = message.content as [
        Anthropic.ServerToolUseBlock,
        Anthropic.WebSearchToolResultBlock,
        Anthropic.TextBlock,
      ];
      expect(call).toMatchObject({ name: 'web_search', input: { query: expect.any(String) } });
      expect(result.tool_use_id).toBe(call.id);
      expect(Array.isArray(result.content) && result.content.length).toBe(3);
      expect(text.citations?.[0]).toMatchObject({
        type: 'web_search_result_location',
        url: expect.stringMatching(/^https:/),
      });
      expect(message.usage.server_tool_use).toEqual({ web_search_requests: 1, web_fetch_requests: 0 });
      expect(before - (await balance())).toBe(tokenCost(message.usage) + SEARCH_NANO);

      // The next turn sends the blocks back; the simulator checks the search results are its own, unaltered.
      const next = await client.messages.create({
        model: MODEL,
        max_tokens: 40,
        tools: [WEB_SEARCH],
        messages: [
          { role: 'user', content: 'What is the toll on the harbour bridge today?' },
          { role: 'assistant', content: message.content },
          { role: 'user', content: 'And tomorrow?' },
        ],
      });
      expect(next.content.some((block) => block.type === 'web_search_tool_result')).toBe(true);
    });

    it('searches when the web search tool is forced, as Claude Code’s WebSearch asks', async () => {
      const message = await client.messages.create({
        model: MODEL,
        max_tokens: 60,
        tools: [
          { name: 'lookup', input_schema: { type: 'object', properties: {} } },
          { type: 'web_search_20250305', name: 'web_search', max_uses: 8 },
        ],
        tool_choice: { type: 'tool', name: 'web_search' },
        messages: [{ role: 'user', content: 'Perform a web search for the query: harbour bridge toll' }],
      });
      expect(message.content.map((block) => block.type).slice(0, 2)).toEqual([
        'server_tool_use',
        'web_search_tool_result',
      ]);
      expect(message.usage.server_tool_use?.web_search_requests).toBe(1);
      // The vendor ran the tool: nothing is left for the client to run.
      expect(message.content.some((block) => block.type === 'tool_use')).toBe(false);
      expect(message.stop_reason).toBe('end_turn');
    });

    it('streams the search blocks and the citation, with the search counted in the final usage', async () => {
      const before = await balance();
      const stream = client.messages.stream({
        model: MODEL,
        max_tokens: 60,
        tools: [WEB_SEARCH],
        messages: [{ role: 'user', content: 'Find the opening hours of the toll office.' }],
      });
      const deltas: string[] = [];
      stream.on('streamEvent', (event) => {
        if (event.type === 'content_block_delta') deltas.push(event.delta.type);
      });
      const message = await stream.finalMessage();
      expect(deltas).toContain('input_json_delta');
      expect(deltas).toContain('citations_delta');
      const call = message.content[0] as Anthropic.ServerToolUseBlock;
      expect(call).toMatchObject({ type: 'server_tool_use', input: { query: expect.any(String) } });
      expect(message.content[1]?.type).toBe('web_search_tool_result');
      const text = message.content.find((block): block is Anthropic.TextBlock => block.type === 'text');
      expect(text?.citations?.length).toBe(1);
      expect(message.usage.server_tool_use).toEqual({ web_search_requests: 1, web_fetch_requests: 0 });
      expect(before - (await balance())).toBe(tokenCost(message.usage) + SEARCH_NANO);
    });
  });

  it('answers a turn that needs no search without one, and charges no search fee', async () => {
    const before = await balance();
    const message = await client.messages.create({
      model: MODEL,
      max_tokens: 40,
      tools: [WEB_SEARCH],
      messages: [{ role: 'user', content: 'Say hello to the toll keeper.' }],
    });
    expect(message.content.map((block) => block.type)).toEqual(['text']);
    expect(message.usage.server_tool_use ?? null).toBeNull();
    const [record] = await harness.gateway.storage.usage.listByAccount(accountId, 1);
    expect(record?.webSearchRequests).toBeUndefined();
    expect(record?.costNano).toBe(tokenCost(message.usage));
    expect(before - (await balance())).toBe(tokenCost(message.usage));
  });

  describe('an account that cannot pay for every search', () => {
    /** An account holding `usd`, and a client on its key. */
    async function accountWith(usd: string): Promise<{ client: Anthropic; balance: () => Promise<bigint> }> {
      const created = await harness.createAccountWithKey(`poor-${database}-${usd}-${Date.now()}@example.com`);
      await harness.gateway.storage.billing.credit({
        accountId: created.accountId,
        kind: 'topup',
        amountNano: parseUsd(usd),
        idempotencyKey: `poor-${created.accountId}`,
        note: null,
        at: Date.now(),
      });
      return {
        client: new Anthropic({ apiKey: created.key, baseURL: harness.gateway.url, maxRetries: 0 }),
        balance: async () => (await harness.gateway.storage.billing.balance(created.accountId))!.balanceNano,
      };
    }

    it('runs without the search it cannot pay for, reporting the tool left out, and charges the tokens only', async () => {
      // $0.005 pays the prompt and the reply, not one $0.01 search.
      const poor = await accountWith('0.005');
      const { data: message, response } = await poor.client.messages
        .create({
          model: MODEL,
          max_tokens: 60,
          tools: [WEB_SEARCH],
          messages: [{ role: 'user', content: 'What is the toll on the harbour bridge today?' }],
        })
        .withResponse();
      expect(message.content.map((block) => block.type)).toEqual(['text']);
      expect(response.headers.get('x-tollgate-dropped-params')).toContain('tools[0]');
      expect(parseUsd('0.005') - (await poor.balance())).toBe(tokenCost(message.usage));
    });

    it('lowers max_uses to the searches it can pay for', async () => {
      // $0.025 pays the tokens and two searches of the three the tool allows: the vendor is told two.
      const poor = await accountWith('0.025');
      const message = await poor.client.messages.create({
        model: MODEL,
        max_tokens: 60,
        tools: [WEB_SEARCH],
        messages: [{ role: 'user', content: 'What is the toll on the harbour bridge today?' }],
      });
      expect(message.usage.server_tool_use?.web_search_requests).toBe(1);
      const sent = proxy.recorded.at(-1)?.body as { tools: Array<{ max_uses: number }> };
      expect(sent.tools[0]?.max_uses).toBe(2);
    });

    it('refuses a forced search it cannot pay for with the balance message, holding nothing', async () => {
      const poor = await accountWith('0.005');
      const error = await poor.client.messages
        .create({
          model: MODEL,
          max_tokens: 60,
          tools: [WEB_SEARCH],
          tool_choice: { type: 'tool', name: 'web_search' },
          messages: [{ role: 'user', content: 'Perform a web search for the query: harbour bridge toll' }],
        })
        .catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(Anthropic.PermissionDeniedError);
      expect((error as Error).message).toMatch(/Credit balance is too low.*the web search it asks for/);
      expect(await poor.balance()).toBe(parseUsd('0.005'));
    });
  });

  describe('refusals, before anything is held', () => {
    async function refusal(body: Record<string, unknown>): Promise<{ status: number; message: string }> {
      const before = await balance();
      const error = await client.messages
        .create({ model: MODEL, max_tokens: 20, messages: [{ role: 'user', content: 'hi' }], ...body } as never)
        .then(
          () => undefined,
          (caught: unknown) => caught,
        );
      expect(error).toBeInstanceOf(Anthropic.APIError);
      expect(await balance()).toBe(before);
      const apiError = error as InstanceType<typeof Anthropic.APIError>;
      return { status: apiError.status!, message: apiError.message };
    }

    it('names the tool and the families that offer it when the model has no equivalent', async () => {
      const { status, message } = await refusal({ model: 'delta-v4-flash', tools: [WEB_SEARCH] });
      expect(status).toBe(400);
      expect(message).toContain("'web_search_20250305' in 'tools[0]'");
      expect(message).toContain('alpha, beta and gamma families');
      const code = await refusal({
        model: 'gamma-2.5-pro',
        tools: [{ type: 'code_execution_20250825', name: 'code_execution' }],
      });
      expect(code.status).toBe(400);
      expect(code.message).toContain('offered by the alpha family');
    });

    it('names the malformed parameter in the caller’s shape', async () => {
      const zero = await refusal({ tools: [{ ...WEB_SEARCH, max_uses: 0 }] });
      expect(zero.status).toBe(400);
      expect(zero.message).toContain("'tools[0].max_uses'");
      const both = await refusal({
        tools: [{ ...WEB_SEARCH, allowed_domains: ['a.example'], blocked_domains: ['b.example'] }],
      });
      expect(both.message).toContain("'tools[0].blocked_domains'");
      const location = await refusal({ tools: [{ ...WEB_SEARCH, user_location: { type: 'exact' } }] });
      expect(location.message).toContain("'tools[0].user_location.type'");
    });

    it('still asks for input_schema on a tool of the client’s own', async () => {
      const { message } = await refusal({ tools: [{ name: 'lookup' }] });
      expect(message).toContain("'tools[0].input_schema'");
    });
  });
});
