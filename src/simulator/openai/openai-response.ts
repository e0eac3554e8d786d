/**
 * OpenAI Chat Completions reply bodies: the `chat.completion` object and the `chat.completion.chunk` stream
 * (openai-chat.md §3 and §4), built from reply-engine replies. Chunks are assembled from a precomputed
 * prefix so a long stream costs one JSON.stringify per piece of text, not per chunk object.
 */
import { SSE_DONE, sseData } from '../../streaming/sse-writer.js';
import type { StreamScript } from '../response-player.js';
import type { Reply } from '../reply-engine.js';
import { openAiErrorBody, openAiErrorForStatus } from './openai-errors.js';

export interface OpenAiReplySet {
  id: string;
  /** Unix seconds. */
  created: number;
  model: string;
  /** One reply per choice (`n`). */
  replies: Reply[];
  promptTokens: number;
}

const SYSTEM_FINGERPRINT = 'fp_simulator';

export function finishReason(reply: Reply): 'stop' | 'length' {
  return reply.end === 'length' ? 'length' : 'stop';
}

function usage(set: OpenAiReplySet): object {
  const completion = set.replies.reduce((sum, reply) => sum + reply.completionTokens, 0);
  return {
    prompt_tokens: set.promptTokens,
    completion_tokens: completion,
    total_tokens: set.promptTokens + completion,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  };
}

export function completionBody(set: OpenAiReplySet): string {
  return JSON.stringify({
    id: set.id,
    object: 'chat.completion',
    created: set.created,
    model: set.model,
    choices: set.replies.map((reply, index) => ({
      index,
      message: { role: 'assistant', content: reply.text, refusal: null, annotations: [] },
      logprobs: null,
      finish_reason: finishReason(reply),
    })),
    usage: usage(set),
    service_tier: 'default',
    system_fingerprint: SYSTEM_FINGERPRINT,
  });
}

/**
 * The stream of a reply set. `usage: null` is on every chunk only when `includeUsage` is set, as OpenAI
 * does; choices of `n > 1` follow one another (clients key them by `index`).
 */
export function streamScript(set: OpenAiReplySet, includeUsage: boolean): StreamScript {
  const prefix =
    `{"id":${JSON.stringify(set.id)},"object":"chat.completion.chunk","created":${set.created},` +
    `"model":${JSON.stringify(set.model)},"system_fingerprint":"${SYSTEM_FINGERPRINT}","choices":[`;
  const suffix = includeUsage ? '],"usage":null}' : ']}';
  const choiceFrame = (index: number, delta: string, finish: string | null): string =>
    sseData(`${prefix}{"index":${index},"delta":${delta},"logprobs":null,"finish_reason":${finish === null ? 'null' : `"${finish}"`}}${suffix}`);

  const frames: string[] = [];
  set.replies.forEach((reply, index) => {
    frames.push(choiceFrame(index, '{"role":"assistant","content":"","refusal":null}', null));
    for (const piece of reply.pieces) frames.push(choiceFrame(index, `{"content":${JSON.stringify(piece)}}`, null));
    frames.push(choiceFrame(index, '{}', finishReason(reply)));
  });
  const tail = [frames.pop() ?? ''];
  if (includeUsage) tail.push(sseData(`${prefix}],"usage":${JSON.stringify(usage(set))}}`));
  tail.push(SSE_DONE);
  return {
    head: frames.slice(0, 1),
    content: frames.slice(1),
    tail,
    // Cut off inside the JSON: the SDK's JSON.parse fails on it.
    malformedFrame: sseData(`${prefix}{"index":0,"delta":{"content":"`),
    // OpenAI reports a failure after the 200 as a data line holding the usual error body (the SDK throws).
    errorFrame: (status) => sseData(openAiErrorBody(openAiErrorForStatus(status))),
  };
}
