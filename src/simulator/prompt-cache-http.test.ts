/**
 * The simulator's prompt cache over real HTTP, one conversation per vendor: turn 2 reads what turn 1 cached, with
 * the exact counts each vendor's rules give, and the prompt total is what the simulator counted before any cache.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from './simulator-server.js';

let simulator: RunningSimulator;

beforeAll(async () => {
  simulator = await startSimulator();
});
afterAll(() => simulator.close());

/** About 9 tokens a rule: `rules` long enough to pass any vendor's minimum. */
function longText(rules: number, topic = 'answers'): string {
  return Array.from({ length: rules }, (_, index) => `Rule ${index}: keep ${topic} short and exact.`).join(' ');
}

async function post(path: string, body: object, headers: Record<string, string>): Promise<Record<string, unknown>> {
  const response = await fetch(simulator.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const json = (await response.json()) as Record<string, unknown>;
  expect(response.status, JSON.stringify(json)).toBe(200);
  return json;
}

describe('Anthropic: breakpoints', () => {
  const headers = (key = 'sk-ant-cache') => ({ 'x-api-key': key, 'anthropic-version': '2023-06-01' });
  const tool = {
    name: 'lookup',
    description: longText(130, 'lookups'),
    input_schema: { type: 'object', properties: { query: { type: 'string' } } },
  };
  const system = longText(160);
  const base = {
    model: 'claude-sonnet-4-6',
    max_tokens: 200,
    tools: [{ ...tool, cache_control: { type: 'ephemeral', ttl: '1h' } }],
    system: [{ type: 'text', text: system, cache_control: { type: 'ephemeral' } }],
  };

  interface AnthropicUsage {
    input_tokens: number;
    cache_read_input_tokens: number;
    cache_creation_input_tokens: number;
    cache_creation: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
  }
  interface AnthropicMessage {
    content: Array<{ type: string; text?: string }>;
    usage: AnthropicUsage;
  }
  async function turn(body: object, key?: string): Promise<AnthropicMessage & { total: number }> {
    const message = (await post('/anthropic/v1/messages', body, headers(key))) as unknown as AnthropicMessage;
    const counted = await post('/anthropic/v1/messages/count_tokens', { ...body, max_tokens: undefined }, headers(key));
    const { usage } = message;
    // The cache splits the prompt; it never changes its size.
    expect(usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens).toBe(
      counted['input_tokens'],
    );
    return { ...message, total: counted['input_tokens'] as number };
  }

  it('turn 1 writes tools (1h) and system (5m); turn 2 reads them and writes its turns; turn 3 reads it all', async () => {
    const first = [{ role: 'user', content: 'First question: what is a prefix?' }];
    const turn1 = await turn({ ...base, messages: first });
    const written = turn1.usage.cache_creation_input_tokens;
    expect(turn1.usage.cache_read_input_tokens).toBe(0);
    expect(turn1.usage.cache_creation.ephemeral_1h_input_tokens).toBeGreaterThan(1_024);
    expect(turn1.usage.cache_creation.ephemeral_5m_input_tokens).toBeGreaterThan(1_400);
    expect(written).toBe(
      turn1.usage.cache_creation.ephemeral_1h_input_tokens + turn1.usage.cache_creation.ephemeral_5m_input_tokens,
    );
    expect(turn1.usage.input_tokens).toBe(turn1.total - written);

    // Turn 2, with the top-level automatic breakpoint (on its last block).
    const answer = turn1.content.find((block) => block.type === 'text')?.text ?? '';
    const second = [...first, { role: 'assistant', content: answer }, { role: 'user', content: 'And a suffix?' }];
    const turn2 = await turn({ ...base, cache_control: { type: 'ephemeral' }, messages: second });
    expect(turn2.usage).toMatchObject({
      cache_read_input_tokens: written,
      cache_creation_input_tokens: turn2.total - written,
      cache_creation: { ephemeral_5m_input_tokens: turn2.total - written, ephemeral_1h_input_tokens: 0 },
      input_tokens: 0,
    });

    const third = [
      ...second,
      { role: 'assistant', content: 'A suffix ends it.' },
      { role: 'user', content: 'Thanks.' },
    ];
    const turn3 = await turn({ ...base, cache_control: { type: 'ephemeral' }, messages: third });
    expect(turn3.usage.cache_read_input_tokens).toBe(turn2.total);
    expect(turn3.usage.cache_creation_input_tokens).toBe(turn3.total - turn2.total);

    // Another credential has a cache of its own.
    const elsewhere = await turn({ ...base, messages: first }, 'sk-ant-other');
    expect(elsewhere.usage.cache_read_input_tokens).toBe(0);
  });

  it('lets a directive fix the counts, and prompt-cache=off bypass the cache', async () => {
    const messages = [{ role: 'user', content: 'Directive check [[sim cache-read=100 cache-write=20]]' }];
    const fixed = await turn({ ...base, system: [{ ...base.system[0], text: `${system} v2` }], messages });
    expect(fixed.usage).toMatchObject({ cache_read_input_tokens: 100, cache_creation_input_tokens: 20 });
    const off = [{ role: 'user', content: 'No cache here [[sim prompt-cache=off]]' }];
    const bypassed = await turn({ ...base, messages: off });
    expect(bypassed.usage).toMatchObject({
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: 0,
      input_tokens: bypassed.total,
    });
  });

  it('caches nothing below the model minimum (4,096 tokens for Haiku 4.5)', async () => {
    const body = { ...base, model: 'claude-haiku-4-5', messages: [{ role: 'user', content: 'Short.' }] };
    const once = await turn(body);
    const twice = await turn(body);
    for (const reply of [once, twice])
      expect(reply.usage).toMatchObject({ cache_read_input_tokens: 0, cache_creation_input_tokens: 0 });
  });
});

interface ChatUsage {
  prompt_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
  prompt_cache_hit_tokens?: number;
  prompt_cache_miss_tokens?: number;
}
interface ChatCompletion {
  choices: Array<{ message: { content: string } }>;
  usage: ChatUsage;
}

describe('OpenAI: automatic prefix caching', () => {
  const chat = async (body: object, key = 'sk-openai-cache'): Promise<ChatCompletion> =>
    (await post('/openai/v1/chat/completions', body, { authorization: `Bearer ${key}` })) as unknown as ChatCompletion;
  const system = { role: 'system', content: longText(200) };

  it('turn 2 reads turn 1 in 128-token steps from 1,024; keys and credentials keep caches apart', async () => {
    const first = [system, { role: 'user', content: 'First question.' }];
    const turn1 = await chat({ model: 'gpt-5.4', messages: first, prompt_cache_key: 'conversation-1' });
    expect(turn1.usage.prompt_tokens).toBeGreaterThan(1_500);
    expect(turn1.usage.prompt_tokens_details.cached_tokens).toBe(0);
    const second = [
      ...first,
      { role: 'assistant', content: turn1.choices[0]?.message.content ?? '' },
      { role: 'user', content: 'Second question.' },
    ];
    const turn2 = await chat({ model: 'gpt-5.4', messages: second, prompt_cache_key: 'conversation-1' });
    // Turn 1's messages, less the 3 tokens that prime the reply, are the cached prefix.
    const prefix = turn1.usage.prompt_tokens - 3;
    expect(turn2.usage.prompt_tokens_details.cached_tokens).toBe(1_024 + Math.floor((prefix - 1_024) / 128) * 128);

    const otherKey = await chat({ model: 'gpt-5.4', messages: second, prompt_cache_key: 'conversation-2' });
    expect(otherKey.usage.prompt_tokens_details.cached_tokens).toBe(0);
    const otherCredential = await chat(
      { model: 'gpt-5.4', messages: second, prompt_cache_key: 'conversation-1' },
      'sk-openai-else',
    );
    expect(otherCredential.usage.prompt_tokens_details.cached_tokens).toBe(0);
  });

  it('does not cache a prompt under 1,024 tokens', async () => {
    const body = { model: 'gpt-5.4', messages: [{ role: 'user', content: longText(20) }] };
    await chat(body);
    expect((await chat(body)).usage.prompt_tokens_details.cached_tokens).toBe(0);
  });
});

describe('DeepSeek: disk caching in 64-token units', () => {
  it('turn 2 reads turn 1 in units of 64 and reports hits and misses', async () => {
    const chat = async (body: object): Promise<ChatCompletion> =>
      (await post('/deepseek/chat/completions', body, {
        authorization: 'Bearer sk-deepseek-cache',
      })) as unknown as ChatCompletion;
    const first = [
      { role: 'system', content: longText(30) },
      { role: 'user', content: 'First question.' },
    ];
    const turn1 = await chat({ model: 'deepseek-chat', messages: first });
    expect(turn1.usage.prompt_cache_hit_tokens).toBe(0);
    const second = [...first, { role: 'assistant', content: 'Short answer.' }, { role: 'user', content: 'Next.' }];
    const turn2 = await chat({ model: 'deepseek-chat', messages: second });
    const hit = Math.floor((turn1.usage.prompt_tokens - 3) / 64) * 64;
    expect(hit).toBeGreaterThan(64);
    expect(turn2.usage).toMatchObject({
      prompt_cache_hit_tokens: hit,
      prompt_cache_miss_tokens: turn2.usage.prompt_tokens - hit,
      prompt_tokens_details: { cached_tokens: hit },
    });
  });
});

describe('Gemini: implicit caching', () => {
  interface GeminiResponse {
    candidates: Array<{ content: { role: string; parts: Array<{ text?: string }> } }>;
    usageMetadata: { promptTokenCount: number; cachedContentTokenCount?: number };
  }
  const generate = async (model: string, body: object): Promise<GeminiResponse> =>
    (await post(`/gemini/v1beta/models/${model}:generateContent`, body, {
      'x-goog-api-key': 'gemini-cache-key',
    })) as unknown as GeminiResponse;

  it('turn 2 reads all of turn 1 above the 2,048-token minimum of Gemini 2.5', async () => {
    const systemInstruction = { parts: [{ text: longText(300) }] };
    const first = [{ role: 'user', parts: [{ text: 'First question.' }] }];
    const turn1 = await generate('gemini-2.5-flash', { systemInstruction, contents: first });
    expect(turn1.usageMetadata.promptTokenCount).toBeGreaterThan(2_048);
    expect(turn1.usageMetadata.cachedContentTokenCount).toBeUndefined();
    const reply = turn1.candidates[0]?.content ?? { role: 'model', parts: [] };
    const second = [...first, reply, { role: 'user', parts: [{ text: 'Second question.' }] }];
    const turn2 = await generate('gemini-2.5-flash', { systemInstruction, contents: second });
    expect(turn2.usageMetadata.cachedContentTokenCount).toBe(turn1.usageMetadata.promptTokenCount);
  });

  it('does not cache on a model without implicit caching, nor below the minimum', async () => {
    const body = { contents: [{ role: 'user', parts: [{ text: longText(300) }] }] };
    await generate('gemini-2.0-flash', body);
    expect((await generate('gemini-2.0-flash', body)).usageMetadata.cachedContentTokenCount).toBeUndefined();
    const short = { contents: [{ role: 'user', parts: [{ text: longText(100) }] }] };
    await generate('gemini-2.5-pro', short);
    expect((await generate('gemini-2.5-pro', short)).usageMetadata.cachedContentTokenCount).toBeUndefined();
  });
});
