import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import { startSimulator, type RunningSimulator } from '../../src/simulator/simulator-server.js';
import { startRecordingProxy, type RecordedRequest, type RecordingProxy } from '../helpers/recording-proxy.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

/**
 * Prompt-cache keys and sticky credentials, seen from the vendor's side: the gateway's upstreams go through a
 * recording proxy in front of the simulator, which shows each request's body and the credential it used. beta
 * gets the client's `prompt_cache_key` and `prompt_cache_retention`, or a key the gateway derived per
 * conversation; the requests of one conversation reach one credential until it fails.
 */

type ChatMessage = OpenAI.Chat.Completions.ChatCompletionMessageParam;

const CREDENTIALS = ['sk-one', 'sk-two', 'sk-three'];
const DERIVED_KEY = /^tg-[0-9a-f]{32}$/;

describe('prompt-cache keys and sticky credentials', () => {
  let simulator: RunningSimulator;
  let proxy: RecordingProxy;
  let harness: TestGateway;
  let client: OpenAI;
  let otherClient: OpenAI;

  async function fundedClient(): Promise<OpenAI> {
    const account = await harness.createAccountWithKey(undefined, 'enterprise');
    await harness.gateway.storage.billing.credit({
      accountId: account.accountId,
      kind: 'topup',
      amountNano: parseUsd('10'),
      idempotencyKey: `t-${account.accountId}`,
      note: null,
      at: Date.now(),
    });
    return new OpenAI({ apiKey: account.key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
  }

  beforeAll(async () => {
    simulator = await startSimulator();
    proxy = await startRecordingProxy(simulator.url);
    const credentials = CREDENTIALS.map((key) => `{ apiKey: ${key}, label: ${key} }`).join(', ');
    const breaker = `
    retries: { maxAttempts: 3, baseDelayMs: 10, maxDelayMs: 50 }
    circuitBreaker: { failureThreshold: 1, cooldownMs: 600000 }`;
    harness = await startTestGateway({
      vendors: [],
      yaml: `
vendors:
  openai:
    baseUrl: ${proxy.url}/openai/v1
    credentials: [${credentials}]${breaker}
  deepseek:
    baseUrl: ${proxy.url}/deepseek
    credentials: [${credentials}]${breaker}
`,
    });
    client = await fundedClient();
    otherClient = await fundedClient();
  });

  afterAll(async () => {
    await harness?.close();
    await proxy?.close();
    await simulator?.close();
  });

  /** What reached the vendor for the request this call makes (the one it answered, after any failed attempt). */
  async function upstreamOf(send: () => Promise<unknown>): Promise<RecordedRequest> {
    const before = proxy.recorded.length;
    await send();
    const served = proxy.recorded.slice(before).filter((entry) => entry.status === 200);
    expect(served).toHaveLength(1);
    return served[0]!;
  }

  /** A chat conversation of `turns` turns; what reached the vendor for each turn. */
  async function chatConversation(
    opening: string,
    turns: number,
    options: { sender?: OpenAI; model?: string } = {},
  ): Promise<RecordedRequest[]> {
    const messages: ChatMessage[] = [
      { role: 'system', content: 'You are a coding agent.' },
      { role: 'user', content: opening },
    ];
    const seen: RecordedRequest[] = [];
    for (let turn = 0; turn < turns; turn++) {
      let answer = '';
      seen.push(
        await upstreamOf(async () => {
          if (turn % 2 === 1) {
            const stream = await (options.sender ?? client).chat.completions.create({
              model: options.model ?? 'beta-5.4',
              messages,
              stream: true,
            });
            for await (const chunk of stream) answer += chunk.choices[0]?.delta.content ?? '';
          } else {
            const completion = await (options.sender ?? client).chat.completions.create({
              model: options.model ?? 'beta-5.4',
              messages,
            });
            answer = completion.choices[0]!.message.content ?? '';
          }
        }),
      );
      messages.push({ role: 'assistant', content: answer }, { role: 'user', content: `Next step ${turn + 1}` });
    }
    return seen;
  }

  it("a chat client's prompt_cache_key and prompt_cache_retention reach beta as sent", async () => {
    const upstream = await upstreamOf(() =>
      client.chat.completions.create({
        model: 'beta-5.4',
        messages: [{ role: 'user', content: 'hi' }],
        prompt_cache_key: 'chat-session-1',
        prompt_cache_retention: '24h',
      }),
    );
    expect(upstream.path).toBe('/openai/v1/chat/completions');
    expect(upstream.body).toMatchObject({ prompt_cache_key: 'chat-session-1', prompt_cache_retention: '24h' });
  });

  it("a Responses client's key and retention reach beta, and the response echoes them", async () => {
    let echoed: { prompt_cache_key?: string | null; prompt_cache_retention?: string | null } = {};
    const upstream = await upstreamOf(async () => {
      echoed = await client.responses.create({
        model: 'beta-5.4',
        input: 'hi',
        prompt_cache_key: 'codex-session-1',
        prompt_cache_retention: 'in_memory',
        store: false,
      });
    });
    expect(upstream.body).toMatchObject({ prompt_cache_key: 'codex-session-1', prompt_cache_retention: 'in_memory' });
    expect(echoed).toMatchObject({ prompt_cache_key: 'codex-session-1', prompt_cache_retention: 'in_memory' });
  });

  it('a bad key or retention is a 400 naming the field, and nothing is sent', async () => {
    const before = proxy.recorded.length;
    for (const [fields, param] of [
      [{ prompt_cache_key: 'k'.repeat(65) }, 'prompt_cache_key'],
      [{ prompt_cache_retention: '1h' }, 'prompt_cache_retention'],
    ] as const) {
      const chat = await client.chat.completions
        .create({ model: 'beta-5.4', messages: [{ role: 'user', content: 'hi' }], ...(fields as object) })
        .catch((error: unknown) => error);
      expect(chat).toBeInstanceOf(OpenAI.BadRequestError);
      expect((chat as InstanceType<typeof OpenAI.BadRequestError>).param).toBe(param);
      const responses = await client.responses
        .create({ model: 'beta-5.4', input: 'hi', ...(fields as object) })
        .catch((error: unknown) => error);
      expect(responses).toBeInstanceOf(OpenAI.BadRequestError);
      expect((responses as InstanceType<typeof OpenAI.BadRequestError>).param).toBe(param);
    }
    expect(proxy.recorded.length).toBe(before);
  });

  it('without a client key, beta gets one derived per conversation: the same every turn, another for another conversation or API key', async () => {
    const first = await chatConversation('Refactor the billing module', 4);
    const key = first[0]!.body.prompt_cache_key as string;
    expect(key).toMatch(DERIVED_KEY);
    expect(first.map((upstream) => upstream.body.prompt_cache_key)).toEqual([key, key, key, key]);
    const [another] = await chatConversation('Write the release notes', 1);
    expect(another!.body.prompt_cache_key).toMatch(DERIVED_KEY);
    expect(another!.body.prompt_cache_key).not.toBe(key);
    const [otherApiKey] = await chatConversation('Refactor the billing module', 1, { sender: otherClient });
    expect(otherApiKey!.body.prompt_cache_key).toMatch(DERIVED_KEY);
    expect(otherApiKey!.body.prompt_cache_key).not.toBe(key);
  });

  it('a Responses conversation chained by previous_response_id keeps its derived key', async () => {
    const keys: unknown[] = [];
    let previous: string | undefined;
    for (let turn = 0; turn < 3; turn++) {
      const upstream = await upstreamOf(async () => {
        const response = await client.responses.create({
          model: 'beta-5.4',
          instructions: 'You are a coding agent.',
          input: turn === 0 ? 'Fix the failing test' : `Continue ${turn}`,
          ...(previous === undefined ? {} : { previous_response_id: previous }),
        });
        previous = response.id;
        expect(response.prompt_cache_key).toBeNull();
      });
      keys.push(upstream.body.prompt_cache_key);
    }
    expect(keys[0]).toMatch(DERIVED_KEY);
    expect(keys).toEqual([keys[0], keys[0], keys[0]]);
  });

  it("delta takes no cache key: a client's is dropped and reported, a derived one is neither sent nor reported", async () => {
    let dropped: string | null = null;
    const sent = await upstreamOf(async () => {
      const { response } = await client.chat.completions
        .create({
          model: 'delta-v4-flash',
          messages: [{ role: 'user', content: 'hi' }],
          prompt_cache_key: 'chat-session-2',
          prompt_cache_retention: '24h',
        })
        .withResponse();
      dropped = response.headers.get('x-tollgate-dropped-params');
    });
    expect(sent.path).toBe('/deepseek/chat/completions');
    expect(sent.body).not.toHaveProperty('prompt_cache_key');
    expect(sent.body).not.toHaveProperty('prompt_cache_retention');
    expect(dropped!.split(',')).toEqual(expect.arrayContaining(['prompt_cache_key', 'prompt_cache_retention']));
    const derived = await upstreamOf(async () => {
      const { response } = await client.chat.completions
        .create({ model: 'delta-v4-flash', messages: [{ role: 'user', content: 'hi' }] })
        .withResponse();
      expect(response.headers.get('x-tollgate-dropped-params') ?? '').not.toMatch(/prompt_cache/);
    });
    expect(derived.body).not.toHaveProperty('prompt_cache_key');
  });

  it("one conversation's turns all reach one credential; conversations spread over all of them", async () => {
    const credentialsUsed = new Map<string, number>();
    for (let index = 0; index < 30; index++) {
      for (const model of ['beta-5.4', 'delta-v4-flash']) {
        const turns = await chatConversation(`Task number ${index} on ${model}`, 3, { model });
        const credential = turns[0]!.credential!;
        expect(turns.map((upstream) => upstream.credential)).toEqual([credential, credential, credential]);
        credentialsUsed.set(credential, (credentialsUsed.get(credential) ?? 0) + 1);
      }
    }
    // 60 conversations over 3 credentials: each gets some (all on fewer would be a 1-in-10^10 draw).
    expect([...credentialsUsed.keys()].sort()).toEqual([...CREDENTIALS].sort());
  });

  it('after its credential fails, a conversation moves to another one and stays there', async () => {
    const messages: ChatMessage[] = [{ role: 'user', content: 'A long debugging session' }];
    const turn = async (index: number) => {
      const upstream = await upstreamOf(async () => {
        const completion = await client.chat.completions.create({ model: 'beta-5.4', messages });
        messages.push(completion.choices[0]!.message as ChatMessage, { role: 'user', content: `Step ${index}` });
      });
      return upstream.credential!;
    };
    const home = await turn(0);
    for (let index = 1; index < 4; index++) expect(await turn(index)).toBe(home);
    proxy.failing.add(home);
    const before = proxy.recorded.length;
    const moved = await turn(4);
    expect(moved).not.toBe(home);
    // The failed attempt reached the old credential once; the retry went to the new one.
    expect(proxy.recorded.slice(before).map((entry) => [entry.credential, entry.status])).toEqual([
      [home, 500],
      [moved, 200],
    ]);
    const after = proxy.recorded.length;
    for (let index = 5; index < 12; index++) expect(await turn(index)).toBe(moved);
    // Cooling down, the failed credential is not tried again.
    expect(proxy.recorded.slice(after).every((entry) => entry.credential === moved)).toBe(true);
    proxy.failing.delete(home);
  });
});
