/**
 * Body-sized prompts of one repeated character: the simulator overflowed its stack on 7.5 MB (a regular
 * expression over the run) and its counting was quadratic in a run's length (spaces included); in demo mode that
 * ran on the gateway's event loop. Now every vendor answers them, and a prompt's exact counting is bounded.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countPromptWithin, countTokens, EXACT_PROMPT_CHARS } from './reply-engine.js';
import { startSimulator } from './simulator-server.js';

const SIZE = 7_500_000;

let simulator: Awaited<ReturnType<typeof startSimulator>>;

beforeAll(async () => {
  simulator = await startSimulator({ port: 0, host: '127.0.0.1' });
});

afterAll(async () => {
  await simulator?.close();
});

async function post(
  url: string,
  headers: Record<string, string>,
  body: unknown,
): Promise<{ status: number; json: any }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, json: await response.json() };
}

describe('a 7.5 MB prompt of one repeated character', () => {
  it.each(['a', ' ', '\n', '.'])(
    'is answered by every vendor with its prompt counted (%j)',
    { timeout: 120_000 },
    async (character) => {
      // Vendors refuse text that is only whitespace (as Anthropic does), so a run of whitespace gets a word after it.
      const text = character.trim() === '' ? `${character.repeat(SIZE)}end` : character.repeat(SIZE);
      const openai = await post(
        `${simulator.baseUrls.openai}/chat/completions`,
        { authorization: 'Bearer sk-test' },
        {
          model: 'gpt-5.4',
          messages: [{ role: 'user', content: text }],
        },
      );
      expect(openai.status).toBe(200);
      expect(openai.json.usage.prompt_tokens).toBeGreaterThan(SIZE / 256);

      const anthropic = await post(
        `${simulator.baseUrls.anthropic}/v1/messages`,
        { 'x-api-key': 'sk-ant-test', 'anthropic-version': '2023-06-01' },
        {
          model: 'claude-sonnet-5',
          max_tokens: 64,
          messages: [{ role: 'user', content: text }],
        },
      );
      expect(anthropic.status).toBe(200);
      expect(anthropic.json.usage.input_tokens).toBeGreaterThan(SIZE / 256);

      const gemini = await post(
        `${simulator.baseUrls.gemini}/v1beta/models/gemini-3.5-flash:generateContent`,
        { 'x-goog-api-key': 'gemini-test' },
        {
          contents: [{ role: 'user', parts: [{ text }] }],
        },
      );
      expect(gemini.status).toBe(200);
      expect(gemini.json.usageMetadata.promptTokenCount).toBeGreaterThan(SIZE / 256);
    },
  );
});

describe('counting a prompt', () => {
  it('counts the first EXACT_PROMPT_CHARS characters of a prompt exactly and extrapolates the rest, the same every time', () => {
    const prose = 'The river runs north under the old stone bridge. ';
    const small = prose.repeat(100);
    expect(countPromptWithin(() => countTokens(small))).toBe(countTokens(small));
    const big = prose.repeat(Math.ceil((3 * EXACT_PROMPT_CHARS) / prose.length));
    const exactPart = countTokens(big.slice(0, EXACT_PROMPT_CHARS));
    const expected = exactPart + Math.ceil((big.length - EXACT_PROMPT_CHARS) * (exactPart / EXACT_PROMPT_CHARS));
    expect(countPromptWithin(() => countTokens(big))).toBe(expected);
    expect(countPromptWithin(() => countTokens(big))).toBe(expected);
  });

  it('shares one budget among all texts of a prompt: a second large text is extrapolated, not counted', () => {
    const prose = 'Quiet morning light over the garden wall. ';
    const text = prose.repeat(Math.ceil(EXACT_PROMPT_CHARS / prose.length));
    const [first, second] = countPromptWithin(() => [countTokens(text), countTokens(text)]);
    expect(first).toBe(
      countTokens(text.slice(0, EXACT_PROMPT_CHARS)) +
        Math.ceil(
          (text.length - EXACT_PROMPT_CHARS) * (countTokens(text.slice(0, EXACT_PROMPT_CHARS)) / EXACT_PROMPT_CHARS),
        ),
    );
    const ratio = countTokens(text.slice(0, EXACT_PROMPT_CHARS)) / EXACT_PROMPT_CHARS;
    expect(second).toBe(Math.ceil(text.length * ratio));
  });
});
