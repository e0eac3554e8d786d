import OpenAI from 'openai';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from './simulator-server.js';

let simulator: RunningSimulator;
let client: OpenAI;

beforeAll(async () => {
  simulator = await startSimulator();
  client = new OpenAI({ baseURL: simulator.baseUrls.openai, apiKey: 'k', maxRetries: 0, logLevel: 'off' });
});
afterAll(() => simulator.close());

function ask(text: string): ChatCompletionCreateParamsNonStreaming {
  return { model: 'gpt-5.5', messages: [{ role: 'user', content: text }] };
}

/** Streams `text`, returning the content received and the error that ended the stream, if any. */
async function streamText(
  text: string,
  options: { headers?: Record<string, string> } = {},
): Promise<{ text: string; chunks: number; error?: unknown }> {
  let received = '';
  let chunks = 0;
  try {
    const stream = await client.chat.completions.create({ ...ask(text), stream: true }, options);
    for await (const chunk of stream) {
      chunks++;
      received += chunk.choices[0]?.delta.content ?? '';
    }
    return { text: received, chunks };
  } catch (error) {
    return { text: received, chunks, error };
  }
}

async function fullText(text: string): Promise<string> {
  return (await client.chat.completions.create(ask(text))).choices[0]?.message.content ?? '';
}

describe('OpenAI simulator: fault injection', () => {
  it('answers error faults with the vendor status and body, from the header or a directive', async () => {
    const viaHeader = client.chat.completions.create(ask('hello'), {
      headers: { 'x-simulator-fault': 'error status=503' },
    });
    await expect(viaHeader).rejects.toBeInstanceOf(OpenAI.InternalServerError);
    await expect(viaHeader).rejects.toMatchObject({ status: 503, type: 'server_error' });
    const classes = {
      400: OpenAI.BadRequestError,
      401: OpenAI.AuthenticationError,
      403: OpenAI.PermissionDeniedError,
      404: OpenAI.NotFoundError,
      500: OpenAI.InternalServerError,
    };
    for (const [status, errorClass] of Object.entries(classes)) {
      const attempt = client.chat.completions.create(ask(`hello [[sim fault=error status=${status}]]`));
      await expect(attempt).rejects.toBeInstanceOf(errorClass);
      await expect(attempt).rejects.toMatchObject({ status: Number(status) });
    }
    const streamed = await streamText('hello [[sim error]]');
    expect(streamed.error).toMatchObject({ status: 500 });
  });

  it('rate-limits with 429, retry-after and rate_limit_exceeded', async () => {
    const error = await client.chat.completions
      .create(ask('hello [[sim rate-limit retry-after=7]]'))
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect(error).toMatchObject({ status: 429, code: 'rate_limit_exceeded' });
    expect((error as InstanceType<typeof OpenAI.RateLimitError>).headers.get('retry-after')).toBe('7');
  });

  it('sends an in-stream error event after some chunks', async () => {
    // Without a stream there is nothing to interrupt: an ordinary error response.
    await expect(fullText('tell me [[sim error after=3]]')).rejects.toMatchObject({ status: 500 });
    const result = await streamText('tell me [[sim error status=503 after=3]]');
    expect(result.error).toBeInstanceOf(OpenAI.APIError);
    expect((result.error as Error).message).toContain('overloaded');
    expect(result.chunks).toBe(4); // role chunk + 3 content chunks
  }, 10_000);

  it('disconnects mid-stream after the requested chunks, and before any byte for non-stream', async () => {
    const prompt = 'tell me a story [[sim disconnect-mid-stream after=3]]';
    const result = await streamText(prompt);
    expect(result.error).toBeDefined();
    expect(result.chunks).toBe(4);
    expect((await fullText('tell me a story')).length).toBeGreaterThan(result.text.length);
    await expect(client.chat.completions.create(ask(prompt))).rejects.toBeInstanceOf(OpenAI.APIConnectionError);
    // A reply shorter than `after` still fails, before its finish chunk.
    const short = await streamText('hi [[sim words=0 disconnect-mid-stream after=1000]]');
    expect(short.error).toBeDefined();
    expect(short.text).toBe('You said: "hi [[sim words=0 disconnect-mid-stream after=1000]]".');
  });

  it('sends a malformed chunk mid-stream (and a truncated body for non-stream)', async () => {
    const result = await streamText('hello [[sim malformed-chunk after=1]]');
    expect(result.error).toBeInstanceOf(SyntaxError);
    expect(result.chunks).toBe(2);
    await expect(client.chat.completions.create(ask('hello [[sim malformed-chunk]]'))).rejects.toThrow();
  });

  it('delays the first byte', async () => {
    const started = performance.now();
    await client.chat.completions.create(ask('hello [[sim slow-first-byte delay=300]]'));
    expect(performance.now() - started).toBeGreaterThanOrEqual(280);
  });

  it('stalls mid-stream, then continues with the full reply', async () => {
    const prompt = 'hello [[sim stall-mid-stream delay=300 after=2]]';
    const started = performance.now();
    const result = await streamText(prompt);
    expect(performance.now() - started).toBeGreaterThanOrEqual(280);
    expect(result.error).toBeUndefined();
    expect(result.text).toBe(await fullText(prompt));
  });

  it('survives clients leaving in the middle of a stall or a delay', async () => {
    const controller = new AbortController();
    const stream = await client.chat.completions.create(
      { ...ask('hi [[sim stall-mid-stream delay=forever]]'), stream: true },
      { signal: controller.signal },
    );
    setTimeout(() => controller.abort(), 100);
    for await (const chunk of stream) void chunk; // the SDK ends quietly on abort
    const slow = client.chat.completions.create(ask('hi [[sim ttft=5000]]'), { timeout: 100 });
    await expect(slow).rejects.toBeInstanceOf(OpenAI.APIConnectionTimeoutError);
    expect((await fullText('still serving')).length).toBeGreaterThan(0);
  });

  it('ends stalled streams and their timers on close()', async () => {
    const own = await startSimulator();
    const ownClient = new OpenAI({ baseURL: own.baseUrls.openai, apiKey: 'k', maxRetries: 0 });
    const stream = await ownClient.chat.completions.create({
      ...ask('hi [[sim stall-mid-stream delay=forever after=1]]'),
      stream: true,
    });
    const iterator = stream[Symbol.asyncIterator]();
    await iterator.next(); // role chunk and first content chunk have arrived
    const slowRequest = ownClient.chat.completions
      .create(ask('hi [[sim ttft=600000]]'))
      .catch((error: unknown) => error);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const started = performance.now();
    await own.close();
    expect(performance.now() - started).toBeLessThan(5_000); // not the 10-minute stall
    await expect(
      (async () => {
        for (;;) if ((await iterator.next()).done === true) return;
      })(),
    ).rejects.toThrow();
    expect(await slowRequest).toBeInstanceOf(OpenAI.APIConnectionError);
  });
});

describe('OpenAI simulator: pacing', () => {
  it('delays the first token per request (ttft)', async () => {
    const started = performance.now();
    const stream = await client.chat.completions.create({ ...ask('hi [[sim ttft=300]]'), stream: true });
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.content) break;
    }
    expect(performance.now() - started).toBeGreaterThanOrEqual(280);
  });

  it('spaces chunks per request (chunk-delay), streamed and not', async () => {
    const prompt = 'hi [[sim chunk-delay=25 words=5]]';
    let started = performance.now();
    const result = await streamText(prompt);
    const contentChunks = result.chunks - 2; // role and finish chunks carry no text
    expect(contentChunks).toBeGreaterThan(5);
    expect(performance.now() - started).toBeGreaterThanOrEqual(25 * (contentChunks - 1) - 20);
    started = performance.now();
    await client.chat.completions.create(ask(prompt));
    expect(performance.now() - started).toBeGreaterThanOrEqual(25 * (contentChunks - 1) - 20);
  });

  it('applies the server pacing options by default', async () => {
    const paced = await startSimulator({ pacing: { firstTokenDelayMs: 200, chunkDelayMs: 0 } });
    try {
      const pacedClient = new OpenAI({ baseURL: paced.baseUrls.openai, apiKey: 'k', maxRetries: 0 });
      const started = performance.now();
      await pacedClient.chat.completions.create(ask('hello'));
      expect(performance.now() - started).toBeGreaterThanOrEqual(180);
    } finally {
      await paced.close();
    }
  });
});
