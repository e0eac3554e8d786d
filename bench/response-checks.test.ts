import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { startMockUpstream } from './mock-upstream.js';
import { COMPLETION_TOKENS, PROMPT_TOKENS, REPLY_CHUNKS, replyText } from './mock-reply.js';
import { jsonReplyProblem, StreamCheck, type Protocol } from './response-checks.js';
import { requestBodyParts, ROUTES, targetsFor } from './scenarios.js';

let mock: Awaited<ReturnType<typeof startMockUpstream>>;

beforeAll(async () => {
  mock = await startMockUpstream(0);
});

afterAll(async () => {
  await mock.close();
});

/** What the mock really answers for `nonce`, over HTTP, in the vendor protocol `protocol`. */
async function mockReply(protocol: Protocol, stream: boolean, nonce: string): Promise<string> {
  const route = protocol === 'openai' ? ROUTES['same-format'] : ROUTES['openai-to-anthropic'];
  const { direct } = targetsFor(route, mock.origin, 'http://unused', 'unused');
  const { before, after } = requestBodyParts(direct, stream, 0);
  const response = await request(`${mock.origin}${direct.path}`, {
    method: 'POST',
    body: before + nonce + after,
    headers: { 'content-type': 'application/json' },
  });
  expect(response.statusCode).toBe(200);
  return await response.body.text();
}

function streamProblem(protocol: Protocol, text: string, nonce: string, pieceSize = 7): string | undefined {
  const check = new StreamCheck(protocol, replyText(nonce));
  const bytes = Buffer.from(text);
  // Small pieces: events split across reads must still be followed.
  for (let i = 0; i < bytes.length; i += pieceSize) check.push(bytes.subarray(i, i + pieceSize));
  return check.finish();
}

describe.each(['openai', 'anthropic'] as const)('%s replies from the mock', (protocol) => {
  it('pass the checks, JSON and stream', async () => {
    expect(jsonReplyProblem(protocol, await mockReply(protocol, false, 'n1'), replyText('n1'))).toBeUndefined();
    expect(streamProblem(protocol, await mockReply(protocol, true, 'n2'), 'n2')).toBeUndefined();
  });

  it('fail when the reply belongs to another request', async () => {
    expect(jsonReplyProblem(protocol, await mockReply(protocol, false, 'n3'), replyText('other'))).toMatch(
      /not the mock's text/,
    );
    expect(streamProblem(protocol, await mockReply(protocol, true, 'n4'), 'other')).toMatch(/not the mock's text/);
  });

  it('fail when usage is missing or different', async () => {
    const json = await mockReply(protocol, false, 'n5');
    const changed =
      protocol === 'openai'
        ? json.replace(`"completion_tokens":${COMPLETION_TOKENS}`, '"completion_tokens":3')
        : json.replace(`"output_tokens":${COMPLETION_TOKENS}`, '"output_tokens":3');
    expect(changed).not.toBe(json);
    expect(jsonReplyProblem(protocol, changed, replyText('n5'))).toMatch(/usage/);
    const stream = await mockReply(protocol, true, 'n6');
    const withoutUsage =
      protocol === 'openai'
        ? stream
            .split('\n\n')
            .filter((event) => !event.includes('"usage":{'))
            .join('\n\n')
        : stream.replace(`"usage":{"output_tokens":${COMPLETION_TOKENS}}`, '"usage":{"output_tokens":2}');
    expect(withoutUsage).not.toBe(stream);
    expect(streamProblem(protocol, withoutUsage, 'n6')).toMatch(/usage/);
  });

  it('fail when the stream is cut before its end', async () => {
    const stream = await mockReply(protocol, true, 'n7');
    const cut = stream.slice(0, stream.lastIndexOf('data:'));
    expect(streamProblem(protocol, cut, 'n7')).toMatch(/ended without/);
  });
});

describe('StreamCheck', () => {
  it('counts content deltas per piece, so merged chunks are visible', async () => {
    const text = await mockReply('openai', true, 'n8');
    const check = new StreamCheck('openai', replyText('n8'));
    expect(check.push(Buffer.from(text))).toBe(REPLY_CHUNKS);
    expect(check.finish()).toBeUndefined();
  });

  it('refuses content merged into fewer deltas than the mock sent', () => {
    const chunk = (content: string) => `data: ${JSON.stringify({ choices: [{ delta: { content } }] })}\n\n`;
    const usage = `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: PROMPT_TOKENS, completion_tokens: COMPLETION_TOKENS, total_tokens: PROMPT_TOKENS + COMPLETION_TOKENS } })}\n\n`;
    expect(streamProblem('openai', `${chunk(replyText('n9'))}${usage}data: [DONE]\n\n`, 'n9')).toMatch(
      /1 content deltas/,
    );
  });

  it('accepts the data: [DONE] line Tollgate ends messages streams with, only after message_stop', async () => {
    const stream = await mockReply('anthropic', true, 'na');
    expect(streamProblem('anthropic', `${stream}data: [DONE]\n\n`, 'na')).toBeUndefined();
    const early = stream.replace('event: message_stop', 'data: [DONE]\n\nevent: message_stop');
    expect(streamProblem('anthropic', early, 'na')).toMatch(/before message_stop/);
  });
});

describe.each(['openai', 'anthropic'] as const)('%s replies of the --shapes scenarios', (protocol) => {
  /** The mock's answer to a request of the given shape, as the load client sends it. */
  async function shapedReply(
    stream: boolean,
    nonce: string,
    shape: { chunks?: number; promptKiB?: number },
  ): Promise<{ text: string; bodyBytes: number }> {
    const route = protocol === 'openai' ? ROUTES['same-format'] : ROUTES['openai-to-anthropic'];
    const { direct } = targetsFor(route, mock.origin, 'http://unused', 'unused');
    const { before, after } = requestBodyParts(direct, stream, 0, shape);
    const body = before + nonce + after;
    const response = await request(`${mock.origin}${direct.path}`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json' },
    });
    expect(response.statusCode).toBe(200);
    return { text: await response.body.text(), bodyBytes: Buffer.byteLength(body) };
  }

  it('a 500-chunk stream arrives in 500 content deltas with 500 completion tokens, and the 20-chunk check refuses it', async () => {
    const { text } = await shapedReply(true, 'l1', { chunks: 500 });
    const check = new StreamCheck(protocol, replyText('l1', 500), 500);
    expect(check.push(Buffer.from(text))).toBe(500);
    expect(check.finish()).toBeUndefined();
    const shortCheck = new StreamCheck(protocol, replyText('l1', 500));
    shortCheck.push(Buffer.from(text));
    expect(shortCheck.finish()).toMatch(/500 content deltas, the mock sent 20|usage/);
  });

  it('a JSON reply of 500 chunks carries their text and usage', async () => {
    const { text } = await shapedReply(false, 'l2', { chunks: 500 });
    expect(jsonReplyProblem(protocol, text, replyText('l2', 500), 500)).toBeUndefined();
    expect(jsonReplyProblem(protocol, text, replyText('l2', 500))).toMatch(/usage/);
  });

  it('a 32 KB prompt makes a request body of at least 32 KiB and the usual reply', async () => {
    const { text, bodyBytes } = await shapedReply(false, 'l3', { promptKiB: 32 });
    expect(bodyBytes).toBeGreaterThanOrEqual(32 * 1024);
    expect(bodyBytes).toBeLessThan(33 * 1024);
    expect(jsonReplyProblem(protocol, text, replyText('l3'))).toBeUndefined();
  });
});
