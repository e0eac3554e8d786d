import type { TokenLogprob } from '../../canonical/events.js';

/** A token as OpenAI's chat and Responses APIs show it: its UTF-8 bytes always given (Gemini sends none). */
export interface OpenAILogprobToken {
  token: string;
  logprob: number;
  bytes: number[];
}

export interface OpenAILogprobEntry extends OpenAILogprobToken {
  top_logprobs: OpenAILogprobToken[];
}

/** Canonical token log probabilities in the shape both OpenAI client APIs share. */
export function encodeOpenAILogprobs(tokens: readonly TokenLogprob[]): OpenAILogprobEntry[] {
  return tokens.map((token) => ({ ...openAIToken(token), top_logprobs: token.top.map(openAIToken) }));
}

function openAIToken(token: { token: string; logprob: number; bytes?: number[] }): OpenAILogprobToken {
  return { token: token.token, logprob: token.logprob, bytes: token.bytes ?? [...Buffer.from(token.token, 'utf8')] };
}
