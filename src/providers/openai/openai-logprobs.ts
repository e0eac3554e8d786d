import type { TokenLogprob } from '../../canonical/events.js';
import type { OpenAIChoiceLogprobs, OpenAITokenLogprob } from '../../wire/openai-chat-wire.js';

/** A choice's OpenAI-format `logprobs.content` → canonical token log probabilities (undefined when there are none). */
export function mapOpenAILogprobs(logprobs: OpenAIChoiceLogprobs | null | undefined): TokenLogprob[] | undefined {
  const content = logprobs?.content;
  if (content === null || content === undefined || content.length === 0) return undefined;
  return content.map(mapToken);
}

function mapToken(token: OpenAITokenLogprob): TokenLogprob {
  return {
    ...withBytes(token),
    top: (token.top_logprobs ?? []).map(withBytes),
  };
}

function withBytes(token: { token: string; logprob: number; bytes?: number[] | null }): {
  token: string;
  logprob: number;
  bytes?: number[];
} {
  return token.bytes === null || token.bytes === undefined
    ? { token: token.token, logprob: token.logprob }
    : { token: token.token, logprob: token.logprob, bytes: token.bytes };
}
