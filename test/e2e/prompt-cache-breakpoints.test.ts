/**
 * Prompt-cache breakpoints end to end, read where they arrive: a recording proxy between the spawned gateway and the
 * simulator keeps every body the gateway sent upstream. An Anthropic client's breakpoints reach alpha exactly, an
 * OpenAI chat client's content-part breakpoints too; Responses and Gemini clients on alpha get the gateway's own
 * breakpoints once the prompt is long enough (and none when it is short or tollgate.yaml switches them off);
 * beta, gamma and delta drop breakpoints and say so; bad breakpoints are a 400 in the caller's shape, with nothing
 * held and nothing sent.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VendorName } from '../../src/canonical/request.js';
import { startSimulator } from '../../src/simulator/simulator-server.js';
import { parseUsd } from '../../src/billing/money.js';
import { startRecordingProxy, type RecordedRequest, type RecordingProxy } from '../helpers/recording-proxy.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const FIVE = { type: 'ephemeral' };
const HOUR = { type: 'ephemeral', ttl: '1h' };
/** About 1,500 tokens: above alpha-sonnet-5's minimum cacheable prompt (1,024). */
const LONG_INSTRUCTIONS = 'Answer as a careful river guide who knows every bridge and mill. '.repeat(100);
const VENDORS: VendorName[] = ['anthropic', 'openai', 'gemini', 'deepseek'];

let simulator: Awaited<ReturnType<typeof startSimulator>>;
let proxy: RecordingProxy;
let harness: TestGateway;
let switchedOff: TestGateway;
let key: string;
let accountId: string;
let offKey: string;

function vendorEnv(): Record<string, string> {
  return Object.fromEntries(
    VENDORS.map((vendor) => [
      `${vendor.toUpperCase()}_BASE_URL`,
      proxy.url + new URL(simulator.baseUrls[vendor]).pathname,
    ]),
  );
}

beforeAll(async () => {
  simulator = await startSimulator();
  proxy = await startRecordingProxy(simulator.url);
  harness = await startTestGateway({ env: vendorEnv() });
  switchedOff = await startTestGateway({
    env: vendorEnv(),
    yaml: 'models:\n  alpha-sonnet-5:\n    automaticCaching: false\n',
  });
  ({ key, accountId } = await harness.createAccountWithKey());
  await harness.gateway.storage.billing.credit({
    accountId,
    kind: 'topup',
    amountNano: parseUsd('5'),
    idempotencyKey: `t-${accountId}`,
    note: null,
    at: Date.now(),
  });
  ({ key: offKey } = await switchedOff.createAccountWithKey());
}, 120_000);

afterAll(async () => {
  await harness?.close();
  await switchedOff?.close();
  await proxy?.close();
  await simulator?.close();
});

interface Reply {
  status: number;
  headers: Headers;
  json: Record<string, any>;
  /** The bodies the gateway sent upstream for this request. */
  upstream: RecordedRequest[];
}

async function post(path: string, body: unknown, headers: Record<string, string>, gateway = harness): Promise<Reply> {
  const before = proxy.recorded.length;
  const response = await fetch(`${gateway.gateway.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const json = (await response.json()) as Record<string, any>;
  return { status: response.status, headers: response.headers, json, upstream: proxy.recorded.slice(before) };
}

const anthropic = (body: unknown) =>
  post('/v1/messages', body, { 'x-api-key': key, 'anthropic-version': '2023-06-01' });
const chat = (body: unknown) => post('/v1/chat/completions', body, { authorization: `Bearer ${key}` });
const responses = (body: unknown, gateway = harness, apiKey = key) =>
  post('/v1/responses', body, { authorization: `Bearer ${apiKey}` }, gateway);
const gemini = (model: string, body: unknown, gateway = harness, apiKey = key) =>
  post(`/v1beta/models/${model}:generateContent`, body, { 'x-goog-api-key': apiKey }, gateway);

/** The one body a request sent upstream. */
function sent(reply: Reply): Record<string, any> {
  expect(reply.status, JSON.stringify(reply.json)).toBe(200);
  expect(reply.upstream).toHaveLength(1);
  return reply.upstream[0]!.body;
}

describe('breakpoints forwarded to alpha', () => {
  it("an Anthropic client's breakpoints on tools, system, messages and the top level reach the vendor exactly", async () => {
    const reply = await anthropic({
      model: 'alpha-sonnet-5',
      max_tokens: 50,
      tools: [{ name: 'now', description: 'The time', input_schema: { type: 'object' }, cache_control: HOUR }],
      system: [
        // Claude Code's beta members travel as they are.
        { type: 'text', text: 'You are terse.', cache_control: { ...HOUR, scope: 'global' } },
        { type: 'text', text: 'Today is Sunday.' },
      ],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'What time is it?', cache_control: FIVE }] },
        { role: 'assistant', content: 'Let me look.' },
        { role: 'user', content: 'Please.' },
      ],
      cache_control: { ...FIVE, evict_on_complete: true },
    });
    const body = sent(reply);
    expect(body.tools[0].cache_control).toEqual(HOUR);
    expect(body.system).toEqual([
      { type: 'text', text: 'You are terse.', cache_control: { ...HOUR, scope: 'global' } },
      { type: 'text', text: 'Today is Sunday.' },
    ]);
    expect(body.messages[0].content).toEqual([{ type: 'text', text: 'What time is it?', cache_control: FIVE }]);
    expect(JSON.stringify(body.messages.slice(1))).not.toContain('cache_control');
    expect(body.cache_control).toEqual({ ...FIVE, evict_on_complete: true });
    expect(reply.headers.get('x-tollgate-dropped-params')).toBeNull();
  });

  it("an OpenAI chat client's content-part breakpoints reach alpha on the blocks that carried them", async () => {
    const reply = await chat({
      model: 'alpha-sonnet-5',
      max_tokens: 50,
      messages: [
        { role: 'system', content: [{ type: 'text', text: 'You are terse.', cache_control: HOUR }] },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Here is the log.', cache_control: FIVE },
            { type: 'text', text: 'What failed?' },
          ],
        },
      ],
    });
    const body = sent(reply);
    expect(body.system).toEqual([{ type: 'text', text: 'You are terse.', cache_control: HOUR }]);
    expect(body.messages[0].content).toEqual([
      { type: 'text', text: 'Here is the log.', cache_control: FIVE },
      { type: 'text', text: 'What failed?' },
    ]);
    expect(reply.headers.get('x-tollgate-dropped-params')).toBeNull();
  });
});

describe('breakpoints the gateway places on alpha', () => {
  const responsesBody = (instructions: string) => ({
    model: 'alpha-sonnet-5',
    max_output_tokens: 50,
    instructions,
    input: [
      { role: 'user', content: 'Where does the walk start?' },
      { role: 'assistant', content: 'At the old bridge.' },
      { role: 'user', content: 'And where does it end?' },
    ],
  });
  const geminiBody = (instruction: string) => ({
    systemInstruction: { parts: [{ text: instruction }] },
    contents: [
      { role: 'user', parts: [{ text: 'Where does the walk start?' }] },
      { role: 'model', parts: [{ text: 'At the old bridge.' }] },
      { role: 'user', parts: [{ text: 'And where does it end?' }] },
    ],
    generationConfig: { maxOutputTokens: 50 },
  });

  /** The gateway's two breakpoints: the last system block and the last block of the last user turn. */
  function expectPlaced(body: Record<string, any>): void {
    expect(body.system.at(-1).cache_control).toEqual(FIVE);
    expect(body.messages.at(-1).role).toBe('user');
    expect(body.messages.at(-1).content.at(-1).cache_control).toEqual(FIVE);
    expect(JSON.stringify(body.messages.slice(0, -1))).not.toContain('cache_control');
    expect(body.cache_control).toBeUndefined();
  }

  it('a Responses client with a long prompt gets them; with a short one, none', async () => {
    expectPlaced(sent(await responses(responsesBody(LONG_INSTRUCTIONS))));
    expect(JSON.stringify(sent(await responses(responsesBody('Be brief.'))))).not.toContain('cache_control');
  });

  it('a Gemini client with a long prompt gets them; with a short one, none', async () => {
    expectPlaced(sent(await gemini('alpha-sonnet-5', geminiBody(LONG_INSTRUCTIONS))));
    expect(JSON.stringify(sent(await gemini('alpha-sonnet-5', geminiBody('Be brief.'))))).not.toContain(
      'cache_control',
    );
  });

  it('none when tollgate.yaml sets models.alpha-sonnet-5.automaticCaching: false', async () => {
    const off = sent(await responses(responsesBody(LONG_INSTRUCTIONS), switchedOff, offKey));
    expect(JSON.stringify(off)).not.toContain('cache_control');
    const offGemini = sent(await gemini('alpha-sonnet-5', geminiBody(LONG_INSTRUCTIONS), switchedOff, offKey));
    expect(JSON.stringify(offGemini)).not.toContain('cache_control');
  });
});

describe('breakpoints to the other families', () => {
  it.each(['beta-5.4', 'gamma-2.5-pro', 'delta-v4-flash'])(
    'on %s they are dropped and named in x-tollgate-dropped-params',
    async (model) => {
      const fromAnthropic = await anthropic({
        model,
        max_tokens: 50,
        system: [{ type: 'text', text: 'You are terse.', cache_control: FIVE }],
        messages: [{ role: 'user', content: 'Hello.' }],
      });
      expect(JSON.stringify(sent(fromAnthropic))).not.toContain('cache_control');
      expect(fromAnthropic.headers.get('x-tollgate-dropped-params')?.split(',')).toContain('cache_control');
      const fromChat = await chat({
        model,
        max_tokens: 50,
        messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello.', cache_control: FIVE }] }],
      });
      expect(JSON.stringify(sent(fromChat))).not.toContain('cache_control');
      expect(fromChat.headers.get('x-tollgate-dropped-params')?.split(',')).toContain('cache_control');
    },
  );
});

describe('bad breakpoints: a 400 naming the field, nothing held, nothing sent', () => {
  const fives = (count: number) =>
    Array.from({ length: count }, (_, index) => ({ type: 'text', text: `part ${index}`, cache_control: FIVE }));
  const cases: Array<{
    name: string;
    anthropic: Record<string, unknown>;
    anthropicParam: string;
    chat: Record<string, unknown>;
    chatParam: string;
  }> = [
    {
      name: 'an unknown type',
      anthropic: {
        system: [{ type: 'text', text: 'a', cache_control: { type: 'persistent' } }],
        messages: [{ role: 'user', content: 'b' }],
      },
      anthropicParam: 'system[0].cache_control.type',
      chat: {
        messages: [{ role: 'user', content: [{ type: 'text', text: 'a', cache_control: { type: 'persistent' } }] }],
      },
      chatParam: 'messages[0].content[0].cache_control.type',
    },
    {
      name: 'a ttl other than 5m or 1h',
      anthropic: {
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'a', cache_control: { type: 'ephemeral', ttl: '24h' } }] },
        ],
      },
      anthropicParam: 'messages[0].content[0].cache_control.ttl',
      chat: { messages: [{ role: 'user', content: 'a', cache_control: { type: 'ephemeral', ttl: '24h' } }] },
      chatParam: 'messages[0].cache_control.ttl',
    },
    {
      name: 'more than four breakpoints',
      anthropic: { messages: [{ role: 'user', content: fives(5) }] },
      anthropicParam: 'messages[0].content[4].cache_control',
      chat: { messages: [{ role: 'user', content: fives(5) }] },
      chatParam: 'messages[0].content[4].cache_control',
    },
    {
      name: 'a 1-hour breakpoint after a 5-minute one',
      anthropic: {
        system: [{ type: 'text', text: 'a', cache_control: FIVE }],
        messages: [{ role: 'user', content: [{ type: 'text', text: 'b', cache_control: HOUR }] }],
      },
      anthropicParam: 'messages[0].content[0].cache_control',
      chat: {
        messages: [
          { role: 'system', content: 'a', cache_control: FIVE },
          { role: 'user', content: 'b', cache_control: HOUR },
        ],
      },
      chatParam: 'messages[1].cache_control',
    },
  ];

  it.each(cases)('$name', async (testCase) => {
    const before = await harness.gateway.storage.billing.balance(accountId);
    const fromAnthropic = await anthropic({ model: 'alpha-sonnet-5', max_tokens: 50, ...testCase.anthropic });
    expect(fromAnthropic.status).toBe(400);
    expect(fromAnthropic.json.type).toBe('error');
    expect(fromAnthropic.json.error.type).toBe('invalid_request_error');
    expect(fromAnthropic.json.error.message).toContain(testCase.anthropicParam);
    expect(fromAnthropic.upstream).toEqual([]);
    const fromChat = await chat({ model: 'alpha-sonnet-5', max_tokens: 50, ...testCase.chat });
    expect(fromChat.status).toBe(400);
    expect(fromChat.json.error.type).toBe('invalid_request_error');
    expect(fromChat.json.error.param).toBe(testCase.chatParam);
    expect(fromChat.upstream).toEqual([]);
    expect(await harness.gateway.storage.billing.balance(accountId)).toEqual(before);
  });
});
