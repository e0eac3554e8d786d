import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../canonical/errors.js';
import type { CanonicalEvent } from '../../canonical/events.js';
import { emptyUsage } from '../../canonical/usage.js';
import { GeminiStreamEncoder, type GeminiStreamFraming } from './gemini-encode-stream.js';
import { encodeGeminiResponse, type GeminiResponseContext } from './gemini-encode-response.js';
import { unpackReasoning } from './gemini-reasoning-carrier.js';
import { accumulate } from '../../canonical/accumulate.js';
import { WholeReply } from '../../providers/whole-reply.js';

const context: GeminiResponseContext = {
  responseId: 'req_1',
  model: 'alpha-sonnet-5',
  vendor: 'anthropic',
  includeThoughts: true,
};
const usage = { ...emptyUsage(), inputTokens: 10, cacheReadTokens: 2, outputTokens: 7, reasoningTokens: 3 };

const toolReply: CanonicalEvent[] = [
  { type: 'response-start', id: 'x', model: 'claude', created: 0 },
  { type: 'reasoning-start', blockId: 'r' },
  { type: 'reasoning-delta', blockId: 'r', text: 'Look it ' },
  { type: 'reasoning-delta', blockId: 'r', text: 'up.' },
  { type: 'reasoning-signature', blockId: 'r', signature: 'sig' },
  { type: 'reasoning-end', blockId: 'r' },
  { type: 'tool-call-start', blockId: 't', id: 'toolu_1', name: 'lookup' },
  { type: 'tool-call-delta', blockId: 't', argumentsDelta: '{"word":' },
  { type: 'tool-call-delta', blockId: 't', argumentsDelta: '"toll"}' },
  { type: 'tool-call-end', blockId: 't' },
  { type: 'usage', usage },
  { type: 'finish', reason: 'tool-calls', rawReason: 'tool_use' },
];

interface Chunk {
  candidates?: Array<{
    content: { role: string; parts: Array<Record<string, unknown>> };
    finishReason?: string;
    index?: number;
  }>;
  usageMetadata?: Record<string, unknown>;
  responseId?: string;
  error?: { code: number; status: string };
}

function run(events: CanonicalEvent[], framing: GeminiStreamFraming, end: 'finish' | 'error' = 'finish'): string {
  const encoder = new GeminiStreamEncoder(context, framing);
  let out = events.map((event) => encoder.encode(event)).join('');
  out +=
    end === 'finish' ? encoder.finish(usage, 1234n) : encoder.error(new GatewayError('upstream_server_error', 'boom'));
  return out;
}

function sseChunks(text: string): Chunk[] {
  return text
    .split('\n\n')
    .filter((event) => event !== '')
    .map((event) => {
      expect(event.startsWith('data: ')).toBe(true);
      return JSON.parse(event.slice('data: '.length)) as Chunk;
    });
}

describe('GeminiStreamEncoder', () => {
  it('SSE: every chunk holds parts, the last one the finish reason and usage; no [DONE]', () => {
    const text = run(toolReply, 'sse');
    expect(text).not.toContain('[DONE]');
    const chunks = sseChunks(text);
    expect(
      chunks.every((chunk) => chunk.candidates![0]!.content.parts.length > 0 && chunk.responseId === 'req_1'),
    ).toBe(true);
    expect(
      chunks
        .slice(0, -1)
        .every((chunk) => chunk.candidates![0]!.finishReason === undefined && chunk.usageMetadata === undefined),
    ).toBe(true);
    const last = chunks.at(-1)!;
    expect(last.candidates![0]!.finishReason).toBe('STOP');
    expect(last.usageMetadata).toEqual({
      promptTokenCount: 12,
      candidatesTokenCount: 4,
      thoughtsTokenCount: 3,
      cachedContentTokenCount: 2,
      totalTokenCount: 19,
      cost: '0.000001234',
      cost_nano_usd: '1234',
    });
    const parts = chunks.flatMap((chunk) => chunk.candidates![0]!.content.parts);
    expect(
      parts
        .filter((part) => part.thought === true)
        .map((part) => part.text)
        .join(''),
    ).toBe('Look it up.');
    expect(parts.find((part) => part.thoughtSignature === 'sig')).toMatchObject({ thought: true, text: '' });
  });

  it('the call is whole, with the reply reasoning carried on it (Gemini CLI drops thought parts)', () => {
    const parts = sseChunks(run(toolReply, 'sse')).flatMap((chunk) => chunk.candidates![0]!.content.parts);
    const call = parts.find((part) => part.functionCall !== undefined)!;
    expect(call.functionCall).toEqual({ id: 'toolu_1', name: 'lookup', args: { word: 'toll' } });
    expect(unpackReasoning(call.thoughtSignature as string)).toEqual([
      { type: 'reasoning', text: 'Look it up.', signature: 'sig', originVendor: 'anthropic' },
    ]);
  });

  it('JSON array framing without alt=sse: one array of whole responses', () => {
    const chunks = JSON.parse(run(toolReply, 'json-array')) as Chunk[];
    expect(chunks.at(-1)!.candidates![0]!.finishReason).toBe('STOP');
    expect(chunks.length).toBeGreaterThan(2);
  });

  it('a failure after the headers: the held chunk, then {"error": {...}} (and the array closed)', () => {
    const events = toolReply.slice(0, 4);
    const sse = sseChunks(run(events, 'sse', 'error'));
    expect(sse.at(-1)!.error).toMatchObject({ code: 500, status: 'INTERNAL' });
    expect(sse.at(-2)!.candidates![0]!.content.parts).toEqual([{ text: 'up.', thought: true }]);
    const array = JSON.parse(run(events, 'json-array', 'error')) as Chunk[];
    expect(array.at(-1)!.error!.status).toBe('INTERNAL');
  });

  it('an error event inside the stream ends it: nothing after the error chunk', () => {
    const encoder = new GeminiStreamEncoder(context, 'json-array');
    let out = encoder.encode({ type: 'text-delta', blockId: 't', text: 'a' });
    out += encoder.encode({ type: 'error', error: new GatewayError('upstream_bad_response', 'bad') });
    out += encoder.encode({ type: 'text-delta', blockId: 't', text: 'b' });
    out += encoder.finish(usage);
    const chunks = JSON.parse(out) as Chunk[];
    expect(chunks.map((chunk) => (chunk.error === undefined ? 'chunk' : chunk.error.status))).toEqual([
      'chunk',
      'UNAVAILABLE',
    ]);
    // 503 with UNAVAILABLE, as Google pairs them, not the catalog's 502 (the HTTP status went out as 200).
    expect(chunks.at(-1)!.error!.code).toBe(503);
  });

  it('an error chunk pairs each status name with its google.rpc code', () => {
    const pairs = (
      ['upstream_timeout', 'upstream_rate_limited', 'upstream_auth_failed', 'upstream_server_error'] as const
    ).map((code) => {
      const encoder = new GeminiStreamEncoder(context, 'json-array');
      const chunks = JSON.parse(encoder.error(new GatewayError(code, 'x'))) as Chunk[];
      return [chunks.at(-1)!.error!.code, chunks.at(-1)!.error!.status];
    });
    expect(pairs).toEqual([
      [504, 'DEADLINE_EXCEEDED'],
      [429, 'RESOURCE_EXHAUSTED'],
      [503, 'UNAVAILABLE'],
      [500, 'INTERNAL'],
    ]);
  });

  it('an empty reply still ends with a chunk that has a part and a finish reason', () => {
    const chunks = sseChunks(run([{ type: 'finish', reason: 'length', rawReason: 'max_tokens' }], 'sse'));
    expect(chunks).toHaveLength(1);
    expect(chunks[0]!.candidates![0]).toMatchObject({ content: { parts: [{ text: '' }] }, finishReason: 'MAX_TOKENS' });
  });

  it('the non-stream reply is the same content, thoughts left out unless asked for', async () => {
    async function* events() {
      yield* toolReply;
    }
    const response = await accumulate(events());
    const shown = encodeGeminiResponse(response, context, 5n);
    expect(shown.candidates![0]!.content!.parts!.map((part) => Object.keys(part).sort().join('+'))).toEqual([
      'text+thought+thoughtSignature',
      'functionCall+thoughtSignature',
    ]);
    const hidden = encodeGeminiResponse(response, { ...context, includeThoughts: false });
    expect(hidden.candidates![0]!.content!.parts!.map((part) => Object.keys(part).sort().join('+'))).toEqual([
      'functionCall+thoughtSignature',
    ]);
    expect(hidden.usageMetadata).not.toHaveProperty('cost');
  });
});

describe('GeminiStreamEncoder: several candidates', () => {
  const tokens = [{ token: 'A', logprob: -0.25, top: [{ token: 'A', logprob: -0.25 }] }];
  const twoCandidates: CanonicalEvent[] = [
    { type: 'response-start', id: 'r', model: 'm', created: 1 },
    { type: 'text-start', blockId: 't0' },
    { type: 'text-delta', blockId: 't0', text: 'A', logprobs: tokens },
    { type: 'text-end', blockId: 't0' },
    { type: 'text-start', blockId: 't1', choice: 1 },
    { type: 'text-delta', blockId: 't1', text: 'B' },
    { type: 'text-end', blockId: 't1' },
    { type: 'finish', reason: 'stop', rawReason: 'stop' },
    { type: 'finish', reason: 'length', rawReason: 'length', choice: 1 },
  ];

  it('each chunk names its candidate; the last has every candidate and its finish; tokens as logprobsResult', () => {
    const chunks = sseChunks(run(twoCandidates, 'sse'));
    expect(chunks[0]!.candidates).toEqual([
      {
        content: { role: 'model', parts: [{ text: 'A' }] },
        index: 0,
        logprobsResult: {
          chosenCandidates: [{ token: 'A', logProbability: -0.25 }],
          topCandidates: [{ candidates: [{ token: 'A', logProbability: -0.25 }] }],
        },
      },
    ]);
    const last = chunks.at(-1)!;
    expect(last.candidates!.map((candidate) => [candidate.index, candidate.finishReason])).toEqual([
      [0, 'STOP'],
      [1, 'MAX_TOKENS'],
    ]);
    expect(last.candidates![1]!.content?.parts).toEqual([{ text: 'B' }]);
  });

  it('a whole reply has one candidate per choice, with logprobsResult and avgLogprobs', async () => {
    const response = encodeGeminiResponse(await accumulate(WholeReply.of(twoCandidates)), context);
    expect(response.candidates!.map((candidate) => candidate.content?.parts)).toEqual([
      [{ text: 'A' }],
      [{ text: 'B' }],
    ]);
    expect(response.candidates![0]!.avgLogprobs).toBe(-0.25);
    expect(response.candidates![1]).not.toHaveProperty('logprobsResult');
  });
});
