import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRequestDirectives } from './fault-directives.js';
import { startSimulator, type RunningSimulator } from './simulator-server.js';

/** `only-key=` (a fault for one credential) and `times=` (a fault a retry gets past), over raw HTTP. */

let simulator: RunningSimulator;
beforeAll(async () => {
  simulator = await startSimulator();
});
afterAll(() => simulator.close());

async function openai(key: string, text: string): Promise<number> {
  const response = await fetch(`${simulator.baseUrls.openai}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-5.4', messages: [{ role: 'user', content: text }] }),
  });
  await response.arrayBuffer();
  return response.status;
}

async function anthropic(key: string, text: string): Promise<number> {
  const response = await fetch(`${simulator.baseUrls.anthropic}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 100, messages: [{ role: 'user', content: text }] }),
  });
  await response.arrayBuffer();
  return response.status;
}

async function gemini(key: string, text: string): Promise<number> {
  const response = await fetch(`${simulator.baseUrls.gemini}/v1beta/models/gemini-2.5-flash:generateContent`, {
    method: 'POST',
    headers: { 'x-goog-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text }] }] }),
  });
  await response.arrayBuffer();
  return response.status;
}

describe('credential-specific and counted faults', () => {
  it('parses only-key and times, and rejects bad values', () => {
    const parsed = parseRequestDirectives('hi [[sim error status=503 only-key=sk-bad times=2]]', undefined);
    expect(parsed.directives).toMatchObject({ fault: 'error', status: 503, onlyKeys: ['sk-bad'], times: 2 });
    expect(parseRequestDirectives('[[sim error only-key=a,b]]', undefined).directives.onlyKeys).toEqual(['a', 'b']);
    expect(parsed.directives.faultKey).toContain('only-key=sk-bad');
    expect(parseRequestDirectives('[[sim times=0 only-key=a,,b]]', undefined).problems).toEqual([
      expect.stringContaining("'times'"),
      expect.stringContaining("'only-key'"),
    ]);
  });

  it('only-key: the fault fires for the listed keys alone, on every vendor', async () => {
    for (const send of [openai, anthropic, gemini]) {
      const text = `Hello [[sim error status=500 only-key=sk-bad,sk-worse]]`;
      expect(await send('sk-bad', text)).toBe(500);
      expect(await send('sk-worse', text)).toBe(500);
      expect(await send('sk-good', text)).toBe(200);
    }
  });

  it('times: the fault fires for the first n requests with the same directive, then the reply is normal', async () => {
    const text = `Counted [[sim rate-limit retry-after=1 times=2]] ${Math.random()}`;
    expect([await openai('k', text), await openai('k', text), await openai('k', text)]).toEqual([429, 429, 200]);
    // Another text is counted on its own.
    expect(await openai('k', `${text} again`)).toBe(429);
  });
});
