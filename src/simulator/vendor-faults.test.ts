import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from './simulator-server.js';

/**
 * The fault and pacing directives against Anthropic, Gemini and DeepSeek, over raw HTTP so each vendor's
 * own wire form (error bodies, in-stream errors, framing) is what gets checked. OpenAI's are in
 * openai-faults.test.ts.
 */

let simulator: RunningSimulator;
beforeAll(async () => {
  simulator = await startSimulator();
});
afterAll(() => simulator.close());

interface SseEvent {
  event?: string;
  data?: string;
  comment?: string;
}

interface VendorCase {
  name: string;
  url(stream: boolean): string;
  headers: Record<string, string>;
  body(text: string, stream: boolean): object;
  /** The visible text an event carries, if it is a content event. */
  textOf(event: SseEvent): string | undefined;
  /** Whether the event is the vendor's in-stream error. */
  isError(event: SseEvent): boolean;
  /** What the error body of `status` must contain. */
  errorBody(status: number): object;
  /** What a 429 must contain. */
  rateLimitBody: object;
}

function json(event: SseEvent): Record<string, unknown> {
  return JSON.parse(event.data ?? '{}') as Record<string, unknown>;
}

const VENDORS: VendorCase[] = [
  {
    name: 'anthropic',
    url: () => `${simulator.baseUrls.anthropic}/v1/messages`,
    headers: { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
    body: (text, stream) => ({
      model: 'claude-haiku-4-5',
      max_tokens: 1000,
      stream,
      messages: [{ role: 'user', content: text }],
    }),
    textOf: (event) => {
      if (event.event !== 'content_block_delta') return undefined;
      const delta = json(event)['delta'] as { text?: string };
      return delta.text;
    },
    isError: (event) => event.event === 'error' && json(event)['type'] === 'error',
    errorBody: (status) => ({ type: 'error', error: { type: status === 529 ? 'overloaded_error' : 'api_error' } }),
    rateLimitBody: { type: 'error', error: { type: 'rate_limit_error' } },
  },
  {
    name: 'gemini',
    url: (stream) =>
      `${simulator.baseUrls.gemini}/v1beta/models/gemini-2.5-flash:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`,
    headers: { 'x-goog-api-key': 'k' },
    body: (text) => ({ contents: [{ role: 'user', parts: [{ text }] }] }),
    textOf: (event) => {
      if (event.data === undefined || 'error' in json(event)) return undefined;
      const candidates = json(event)['candidates'] as Array<{ content: { parts?: Array<{ text?: string }> } }>;
      return (candidates[0]?.content.parts ?? []).map((part) => part.text ?? '').join('');
    },
    isError: (event) => event.data !== undefined && 'error' in json(event),
    errorBody: (status) => ({ error: { code: status, status: status === 503 ? 'UNAVAILABLE' : 'INTERNAL' } }),
    rateLimitBody: {
      error: {
        code: 429,
        status: 'RESOURCE_EXHAUSTED',
        details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '7s' }],
      },
    },
  },
  {
    name: 'deepseek',
    url: () => `${simulator.baseUrls.deepseek}/chat/completions`,
    headers: { authorization: 'Bearer k' },
    body: (text, stream) => ({ model: 'deepseek-chat', stream, messages: [{ role: 'user', content: text }] }),
    textOf: (event) => {
      if (event.data === undefined || event.data === '[DONE]' || 'error' in json(event)) return undefined;
      const choices = json(event)['choices'] as Array<{
        delta: { content?: string | null; role?: string };
        finish_reason: string | null;
      }>;
      const choice = choices[0];
      return choice !== undefined && choice.delta.role === undefined && choice.finish_reason === null
        ? (choice.delta.content ?? '')
        : undefined;
    },
    isError: (event) => event.data !== undefined && event.data !== '[DONE]' && 'error' in json(event),
    errorBody: (status) => ({
      error: {
        message: status === 503 ? 'Server Overloaded, please try again later.' : 'Internal Server Error',
        param: null,
      },
    }),
    rateLimitBody: { error: { message: 'Rate Limit Reached' } },
  },
];

function parseEvents(text: string): SseEvent[] {
  return text
    .split(/\r?\n\r?\n/)
    .filter((block) => block.length > 0)
    .map((block) => {
      const event: SseEvent = {};
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith(':')) event.comment = line.slice(1).trim();
        else if (line.startsWith('event: ')) event.event = line.slice(7);
        else if (line.startsWith('data: ')) event.data = line.slice(6);
      }
      return event;
    });
}

/** Reads the whole body, keeping what arrived before a cut connection. */
async function readAll(response: Response): Promise<{ text: string; error?: unknown }> {
  const reader = response.body?.getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    for (;;) {
      const { done, value } = (await reader?.read()) ?? { done: true, value: undefined };
      if (done) return { text };
      text += decoder.decode(value, { stream: true });
    }
  } catch (error) {
    return { text, error };
  }
}

describe.each(VENDORS)('$name simulator: faults and pacing', (vendor) => {
  const send = (text: string, stream: boolean, headers: Record<string, string> = {}): Promise<Response> =>
    fetch(vendor.url(stream), {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...vendor.headers, ...headers },
      body: JSON.stringify(vendor.body(text, stream)),
    });

  async function streamed(
    text: string,
    headers: Record<string, string> = {},
  ): Promise<{ events: SseEvent[]; texts: string[]; error?: unknown; status: number }> {
    const response = await send(text, true, headers);
    const { text: body, error } = await readAll(response);
    const events = parseEvents(body);
    const texts = events.flatMap((event) => {
      try {
        const piece = vendor.textOf(event);
        return piece === undefined ? [] : [piece];
      } catch {
        return [];
      }
    });
    return { events, texts, error, status: response.status };
  }

  it('answers the error fault with the vendor status and error body, from a directive or the header', async () => {
    const response = await send('hello [[sim error status=503]]', false);
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject(vendor.errorBody(503));
    const viaHeader = await send('hello', true, { 'x-simulator-fault': 'error' });
    expect(viaHeader.status).toBe(500);
    expect(await viaHeader.json()).toMatchObject(vendor.errorBody(500));
  });

  it('rate-limits with 429, retry-after and the vendor body', async () => {
    const response = await send('hello [[sim rate-limit retry-after=7]]', false);
    expect(response.status).toBe(429);
    expect(response.headers.get('retry-after')).toBe('7');
    expect(await response.json()).toMatchObject(vendor.rateLimitBody);
  });

  it('sends the in-stream error event after the requested chunks', async () => {
    const result = await streamed('tell me a story [[sim error status=503 after=3]]');
    expect(result.status).toBe(200);
    expect(result.texts).toHaveLength(3);
    const last = result.events.at(-1);
    expect(last !== undefined && vendor.isError(last)).toBe(true);
    expect(json(last ?? {})).toMatchObject(
      vendor.name === 'anthropic' ? { type: 'error', error: { type: 'api_error' } } : vendor.errorBody(503),
    );
  });

  it('disconnects mid-stream after the requested chunks', async () => {
    const result = await streamed('tell me a story [[sim disconnect-mid-stream after=3]]');
    expect(result.error).toBeDefined();
    expect(result.texts).toHaveLength(3);
    await expect(send('tell me a story [[sim disconnect-mid-stream]]', false)).rejects.toThrow();
  });

  it('sends a malformed chunk mid-stream and a truncated body without streaming', async () => {
    const result = await streamed('hello there [[sim malformed-chunk after=1]]');
    const broken = result.events
      .filter((event) => event.data !== undefined && event.data !== '[DONE]')
      .find((event) => {
        try {
          JSON.parse(event.data ?? '');
          return false;
        } catch {
          return true;
        }
      });
    expect(broken).toBeDefined();
    const response = await send('hello [[sim malformed-chunk]]', false);
    expect(response.status).toBe(200);
    await expect(response.json()).rejects.toThrow();
  });

  it('delays the first byte, and stalls mid-stream then completes the reply', async () => {
    let started = performance.now();
    expect((await send('hello [[sim slow-first-byte delay=300]]', false)).status).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(280);
    started = performance.now();
    // The header form leaves the prompt, and so the reply, unchanged.
    const stalled = await streamed('hello', { 'x-simulator-fault': 'stall-mid-stream delay=300 after=2' });
    expect(performance.now() - started).toBeGreaterThanOrEqual(280);
    expect(stalled.error).toBeUndefined();
    expect(stalled.texts).toEqual((await streamed('hello')).texts);
  });

  it('paces the first token (ttft) and the chunks (chunk-delay)', async () => {
    let started = performance.now();
    const response = await send('hi [[sim ttft=300]]', true);
    const reader = response.body?.getReader();
    let sawContent = false;
    let buffer = '';
    while (!sawContent) {
      const chunk = await reader?.read();
      if (chunk === undefined || chunk.done) break;
      buffer += new TextDecoder().decode(chunk.value);
      sawContent = parseEvents(buffer).some((event) => vendor.textOf(event) !== undefined);
    }
    await reader?.cancel();
    expect(sawContent).toBe(true);
    expect(performance.now() - started).toBeGreaterThanOrEqual(280);
    started = performance.now();
    const paced = await streamed('hi [[sim chunk-delay=20 words=4]]');
    expect(paced.texts.length).toBeGreaterThan(5);
    expect(performance.now() - started).toBeGreaterThanOrEqual(20 * (paced.texts.length - 1) - 20);
  });
});
