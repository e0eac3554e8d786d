/**
 * Web search across families: an Anthropic client's `web_search` tool run on gamma as Google Search grounding (the
 * grounding mapped to cited text, each grounded prompt billed at Gemini's price) and on beta by OpenAI's search model
 * (its `url_citation` annotations mapped to cited text, one search billed per request), and a Google client's
 * `googleSearch` tool run on alpha as Anthropic's web search, on beta by the search model and on gamma as itself, the
 * sources shown to it as `groundingMetadata`, whole and streamed; OpenAI clients' `web_search_options` (Chat
 * Completions) and `web_search` tool (Responses) run on alpha, beta and gamma, the sources shown as `url_citation`
 * annotations and the searches as `web_search_call` items. A family with no web search answers a 400 naming the tool
 * and the families that offer one (a Responses client's hosted tool is dropped and reported there instead, that
 * protocol's rule); a domain list Gemini or OpenAI cannot honour, a client tool beside beta's search, and malformed
 * options are refused, nothing held.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import { AGENTS_PACKAGE_DIR, NODE_24 } from '../helpers/agents-package.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

let harness: TestGateway;
let client: Anthropic;
let key: string;
let accountId: string;

async function balance(): Promise<bigint> {
  return (await harness.gateway.storage.billing.balance(accountId))!.balanceNano;
}

beforeAll(async () => {
  harness = await startTestGateway({ env: { FREE_TOKENS_PER_DAY: '0' } });
  const created = await harness.createAccountWithKey(`search-x-${Date.now()}@example.com`, 'enterprise');
  ({ key, accountId } = created);
  await harness.gateway.storage.billing.credit({
    accountId,
    kind: 'topup',
    amountNano: parseUsd('5'),
    idempotencyKey: `t-${accountId}`,
    note: null,
    at: Date.now(),
  });
  client = new Anthropic({ apiKey: key, baseURL: harness.gateway.url, maxRetries: 0 });
});

afterAll(async () => {
  await harness?.close();
});

describe('an Anthropic client searching on gamma', () => {
  it('gets the grounding as cited text and pays $35 per 1,000 grounded prompts on top of the tokens', async () => {
    const before = await balance();
    const { data: message, response } = await client.messages
      .create({
        model: 'gamma-2.5-pro',
        max_tokens: 60,
        tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 2 }],
        messages: [{ role: 'user', content: 'Which bridges charge a toll this winter?' }],
      })
      .withResponse();
    expect(response.headers.get('x-tollgate-dropped-params')).toContain('max_uses');
    const text = message.content.find((block): block is Anthropic.TextBlock => block.type === 'text')!;
    expect(text.citations?.[0]).toMatchObject({
      type: 'web_search_result_location',
      url: expect.stringMatching(/^https:\/\/vertexaisearch\.example\/grounding\//),
      title: 'source1.example',
      cited_text: expect.any(String),
    });
    expect(message.usage.server_tool_use).toEqual({ web_search_requests: 1, web_fetch_requests: 0 });
    // gamma-2.5-pro: $1/M in, $10/M out.
    const tokens = BigInt(message.usage.input_tokens) * 1_000n + BigInt(message.usage.output_tokens) * 10_000n;
    expect(before - (await balance())).toBe(tokens + 35_000_000n);
  });

  it('is refused a domain list Google Search cannot honour, with nothing held', async () => {
    const before = await balance();
    const error = await client.messages
      .create({
        model: 'gamma-2.5-pro',
        max_tokens: 20,
        tools: [{ type: 'web_search_20250305', name: 'web_search', allowed_domains: ['a.example'] }],
        messages: [{ role: 'user', content: 'hi' }],
      })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    expect((error as Error).message).toContain("'tools[0].allowed_domains'");
    expect(await balance()).toBe(before);
  });
});

describe('an Anthropic client searching on beta', () => {
  const request = {
    model: 'beta-5.4',
    max_tokens: 60,
    tools: [{ type: 'web_search_20250305' as const, name: 'web_search' as const, max_uses: 3 }],
    messages: [{ role: 'user' as const, content: 'Which bridges charge a toll this winter?' }],
  };

  /** beta-5.4: $2.50/M in, $0.25/M cached, $15/M out; one search at $10 per 1,000. */
  function tokensNano(usage: Anthropic.Usage): bigint {
    return (
      BigInt(usage.input_tokens) * 2_500n +
      BigInt(usage.cache_read_input_tokens ?? 0) * 250n +
      BigInt(usage.output_tokens) * 15_000n
    );
  }

  function expectSearched(message: Anthropic.Message): void {
    const types = message.content.map((block) => block.type);
    expect(types).toEqual(['text', 'server_tool_use', 'web_search_tool_result']);
    const text = message.content[0] as Anthropic.TextBlock;
    expect(text.citations?.[0]).toMatchObject({
      type: 'web_search_result_location',
      url: expect.stringMatching(/^https:\/\/search\.example\//),
      title: 'source1.example',
      cited_text: expect.any(String),
    });
    expect(message.content[1]).toMatchObject({ name: 'web_search', input: { query: request.messages[0]!.content } });
    const results = (message.content[2] as Anthropic.WebSearchToolResultBlock)
      .content as Anthropic.WebSearchResultBlock[];
    expect(results.map((result) => result.title)).toEqual(['source1.example', 'source2.example']);
    expect(message.usage.server_tool_use).toEqual({ web_search_requests: 1, web_fetch_requests: 0 });
  }

  it('runs it on the search model, cites its pages and pays one search at $10 per 1,000', async () => {
    const before = await balance();
    const { data: message, response } = await client.messages.create(request).withResponse();
    expect(response.headers.get('x-tollgate-dropped-params')).toContain('max_uses');
    expectSearched(message);
    expect(before - (await balance())).toBe(tokensNano(message.usage) + 10_000_000n);
  });

  it('streamed, the same blocks and the same charge', async () => {
    const before = await balance();
    const message = await client.messages.stream(request).finalMessage();
    expectSearched(message);
    expect(before - (await balance())).toBe(tokensNano(message.usage) + 10_000_000n);
  });

  it('is refused a domain list or a client tool the search model cannot take, with nothing held', async () => {
    const before = await balance();
    const domains = await client.messages
      .create({
        ...request,
        tools: [{ type: 'web_search_20250305', name: 'web_search', blocked_domains: ['a.example'] }],
      })
      .catch((caught: unknown) => caught);
    expect(domains).toBeInstanceOf(Anthropic.BadRequestError);
    expect((domains as Error).message).toContain("'tools[0].blocked_domains'");
    const withTool = await client.messages
      .create({
        ...request,
        tools: [...request.tools, { name: 'lookup', input_schema: { type: 'object' as const, properties: {} } }],
      })
      .catch((caught: unknown) => caught);
    expect(withTool).toBeInstanceOf(Anthropic.BadRequestError);
    expect((withTool as Error).message).toContain("cannot be combined with 'tools'");
    expect(await balance()).toBe(before);
  });
});

interface GenaiOutcome {
  ok: boolean;
  status?: number;
  message?: string;
  grounding?: {
    webSearchQueries?: string[];
    groundingChunks?: Array<{ web?: { uri?: string; title?: string } }>;
    groundingSupports?: Array<{ segment?: { text?: string }; groundingChunkIndices?: number[] }>;
  };
  text?: string;
  cost?: string;
}

/** One `@google/genai` call (Node 24, from the agents package) with `googleSearch`, whole or streamed. */
async function genai(model: string, stream: boolean): Promise<GenaiOutcome> {
  const script = `
    import { GoogleGenAI } from '@google/genai';
    const ai = new GoogleGenAI({ apiKey: process.env.API_KEY, httpOptions: { baseUrl: process.env.GATEWAY_URL, retryOptions: { attempts: 1 } } });
    const request = { model: process.env.MODEL, contents: 'Who runs the toll bridge?', config: { tools: [{ googleSearch: {} }], maxOutputTokens: 60 } };
    try {
      let text = '', grounding, cost;
      if (process.env.STREAM === '1') {
        for await (const chunk of await ai.models.generateContentStream(request)) {
          text += chunk.text ?? '';
          grounding = chunk.candidates?.[0]?.groundingMetadata ?? grounding;
          cost = chunk.usageMetadata?.cost_nano_usd ?? cost;
        }
      } else {
        const reply = await ai.models.generateContent(request);
        text = reply.text; grounding = reply.candidates?.[0]?.groundingMetadata; cost = reply.usageMetadata?.cost_nano_usd;
      }
      console.log(JSON.stringify({ ok: true, text, grounding, cost }));
    } catch (error) {
      console.log(JSON.stringify({ ok: false, status: error.status, message: String(error.message) }));
    }`;
  const { stdout } = await promisify(execFile)(NODE_24, ['--input-type=module', '-e', script], {
    cwd: AGENTS_PACKAGE_DIR,
    timeout: 60_000,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      API_KEY: key,
      GATEWAY_URL: harness.gateway.url,
      MODEL: model,
      STREAM: stream ? '1' : '0',
    },
  });
  return JSON.parse(stdout) as GenaiOutcome;
}

describe('a Google client with googleSearch', () => {
  it.each([
    ['alpha-sonnet-5', false],
    ['alpha-sonnet-5', true],
    ['gamma-3.5-flash', false],
    ['gamma-3.5-flash', true],
    ['beta-5.4', false],
    ['beta-5.4', true],
  ])(
    'on %s (stream: %s) sees the search and its sources as groundingMetadata',
    async (model, stream) => {
      const outcome = await genai(model, stream);
      expect(outcome.ok, outcome.message).toBe(true);
      expect(outcome.text).not.toBe('');
      expect(outcome.grounding?.webSearchQueries).toHaveLength(1);
      const pages = outcome.grounding?.groundingChunks ?? [];
      expect(pages.length).toBeGreaterThan(0);
      expect(pages[0]?.web?.uri).toMatch(/^https:\/\//);
      expect(outcome.grounding?.groundingSupports?.[0]?.groundingChunkIndices).toEqual([0]);
    },
    90_000,
  );

  it('on delta is refused, naming googleSearch and the families that offer a web search', async () => {
    const outcome = await genai('delta-v4-flash', false);
    expect(outcome.ok).toBe(false);
    expect(outcome.status).toBe(400);
    expect(outcome.message).toContain("'googleSearch' in 'tools[0].googleSearch'");
    expect(outcome.message).toContain('alpha, beta and gamma families');
  }, 90_000);
});

/** A chat stream's text and its annotations (streamed in a delta the SDK's types do not name). */
async function streamedText(
  stream: AsyncIterable<OpenAI.ChatCompletionChunk>,
): Promise<{ text: string; annotations: unknown[] }> {
  let text = '';
  const annotations: unknown[] = [];
  for await (const chunk of stream) {
    const delta = chunk.choices[0]?.delta as { content?: string; annotations?: unknown[] } | undefined;
    text += delta?.content ?? '';
    annotations.push(...(delta?.annotations ?? []));
  }
  return { text, annotations };
}

describe('OpenAI clients searching', () => {
  let openai: OpenAI;
  beforeAll(() => {
    openai = new OpenAI({ apiKey: key, baseURL: `${harness.gateway.url}/v1`, maxRetries: 0 });
  });
  const ask = [{ role: 'user' as const, content: 'Where is the nearest toll plaza?' }];

  it.each(['alpha-sonnet-5', 'gamma-3.5-flash'])(
    'Chat Completions web_search_options on %s: url_citation annotations whole and streamed',
    async (model) => {
      const { data: completion, response } = await openai.chat.completions
        .create({ model, messages: ask, max_completion_tokens: 60, web_search_options: { search_context_size: 'low' } })
        .withResponse();
      expect(response.headers.get('x-tollgate-dropped-params')).toContain('web_search_options.search_context_size');
      const message = completion.choices[0]!.message;
      const annotation = message.annotations?.[0];
      expect(annotation?.type).toBe('url_citation');
      const span = annotation!.url_citation;
      expect(span.url).toMatch(/^https:\/\//);
      expect(span.end_index).toBeGreaterThan(span.start_index);
      expect(span.end_index).toBeLessThanOrEqual(message.content!.length);

      const stream = await openai.chat.completions.create({
        model,
        messages: ask,
        max_completion_tokens: 60,
        stream: true,
        web_search_options: {},
      });
      expect(await streamedText(stream)).toEqual({ text: message.content, annotations: message.annotations });
    },
  );

  it('Chat Completions web_search_options on beta: the options reach the search model, annotations come back', async () => {
    const options = {
      search_context_size: 'low' as const,
      user_location: { type: 'approximate' as const, approximate: { country: 'PT', city: 'Lisbon' } },
    };
    const { data: completion, response } = await openai.chat.completions
      .create({
        model: 'beta-5.4',
        messages: ask,
        max_completion_tokens: 60,
        temperature: 0.2,
        web_search_options: options,
      })
      .withResponse();
    // The search model refuses sampling settings: dropped and reported; the search options it takes are not.
    expect(response.headers.get('x-tollgate-dropped-params')).toBe('temperature');
    const message = completion.choices[0]!.message;
    expect(message.annotations?.map((annotation) => annotation.url_citation.title)).toEqual([
      'source1.example',
      'source2.example',
    ]);
    const span = message.annotations![0]!.url_citation;
    expect(message.content!.slice(span.start_index, span.end_index)).not.toBe('');

    const stream = await openai.chat.completions.create({
      model: 'beta-5.4',
      messages: ask,
      max_completion_tokens: 60,
      stream: true,
      web_search_options: options,
    });
    expect(await streamedText(stream)).toEqual({ text: message.content, annotations: message.annotations });

    const withTools = await openai.chat.completions
      .create({
        model: 'beta-5.4',
        messages: ask,
        web_search_options: {},
        tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: {} } } }],
      })
      .catch((caught: unknown) => caught);
    expect((withTools as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('tools');
  });

  it('Chat Completions web_search_options: a family without web search and malformed options are 400s', async () => {
    const before = await balance();
    const onDelta = await openai.chat.completions
      .create({ model: 'delta-v4-flash', messages: ask, web_search_options: {} })
      .catch((caught: unknown) => caught);
    expect(onDelta).toBeInstanceOf(OpenAI.BadRequestError);
    expect((onDelta as Error).message).toContain(
      "'web_search_options' in 'web_search_options' is not available on delta models",
    );
    expect((onDelta as Error).message).toContain('alpha, beta and gamma families');
    const malformed = await openai.chat.completions
      .create({
        model: 'alpha-sonnet-5',
        messages: ask,
        web_search_options: { user_location: { type: 'approximate', approximate: { country: 'Portugal' } } },
      })
      .catch((caught: unknown) => caught);
    expect((malformed as InstanceType<typeof OpenAI.BadRequestError>).param).toBe(
      'web_search_options.user_location.approximate.country',
    );
    expect(await balance()).toBe(before);
  });

  it('Responses web_search on alpha: a web_search_call item and annotated text, whole, streamed and continued', async () => {
    const reply = await openai.responses.create({
      model: 'alpha-sonnet-5',
      input: 'Where is the nearest toll plaza?',
      tools: [{ type: 'web_search' }],
      max_output_tokens: 60,
    });
    const search = reply.output.find((item) => item.type === 'web_search_call');
    expect(search).toMatchObject({ status: 'completed', action: { type: 'search', query: expect.any(String) } });
    const message = reply.output.find((item) => item.type === 'message') as OpenAI.Responses.ResponseOutputMessage;
    const part = message.content[0] as OpenAI.Responses.ResponseOutputText;
    expect(part.annotations[0]).toMatchObject({ type: 'url_citation', url: expect.stringMatching(/^https:/) });

    const events: string[] = [];
    const stream = await openai.responses.create({
      model: 'alpha-sonnet-5',
      input: 'Where is the nearest toll plaza?',
      tools: [{ type: 'web_search' }],
      max_output_tokens: 60,
      stream: true,
    });
    let completed: OpenAI.Responses.Response | undefined;
    for await (const event of stream) {
      events.push(event.type);
      if (event.type === 'response.completed') completed = event.response;
    }
    expect(events).toContain('response.web_search_call.completed');
    expect(events).toContain('response.output_text.annotation.added');
    expect(completed?.output.map((item) => item.type)).toEqual(reply.output.map((item) => item.type));

    // The stored reply, web_search_call included, is the history of the next turn.
    const next = await openai.responses.create({
      model: 'alpha-sonnet-5',
      previous_response_id: reply.id,
      input: 'And the one after it?',
      max_output_tokens: 400,
    });
    expect(next.status).toBe('completed');
  });

  it('Responses web_search on beta runs on the search model: a web_search_call item and annotated text', async () => {
    const { data: reply, response } = await openai.responses
      .create({ model: 'beta-5.4', input: 'hi there', tools: [{ type: 'web_search' }], max_output_tokens: 400 })
      .withResponse();
    expect(reply.status).toBe('completed');
    expect(response.headers.get('x-tollgate-dropped-params') ?? '').not.toContain('web_search');
    const search = reply.output.find((item) => item.type === 'web_search_call');
    expect(search).toMatchObject({ status: 'completed', action: { type: 'search', query: 'hi there' } });
    const message = reply.output.find((item) => item.type === 'message') as OpenAI.Responses.ResponseOutputMessage;
    const part = message.content[0] as OpenAI.Responses.ResponseOutputText;
    expect(part.annotations[0]).toMatchObject({ type: 'url_citation', url: expect.stringMatching(/^https:/) });

    // Beside a function tool (as Codex offers it) the search model cannot answer: the search is dropped, reported.
    const { data: withTool, response: toolResponse } = await openai.responses
      .create({
        model: 'beta-5.4',
        input: 'hi there',
        tools: [{ type: 'web_search' }, { type: 'function', name: 'shell', parameters: null, strict: false }],
        max_output_tokens: 400,
      })
      .withResponse();
    expect(withTool.status).toBe('completed');
    expect(withTool.output.some((item) => item.type === 'web_search_call')).toBe(false);
    expect(toolResponse.headers.get('x-tollgate-dropped-params')).toContain('tools.web_search');
  });

  it('Responses web_search on delta is dropped and reported, as the protocol drops hosted tools', async () => {
    const { data: reply, response } = await openai.responses
      .create({ model: 'delta-v4-flash', input: 'hi', tools: [{ type: 'web_search' }], max_output_tokens: 400 })
      .withResponse();
    expect(reply.status).toBe('completed');
    expect(response.headers.get('x-tollgate-dropped-params')).toContain('tools.web_search');
  });
});
