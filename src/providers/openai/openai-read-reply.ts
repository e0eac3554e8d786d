import { GatewayError } from '../../canonical/errors.js';
import type { CanonicalEvent } from '../../canonical/events.js';
import type { OpenAIChatCompletion, OpenAIErrorBody } from '../../wire/openai-chat-wire.js';
import { streamedReplyEvents, upstreamConnectionError, type UpstreamResponse } from '../upstream-http.js';
import { WholeReply } from '../whole-reply.js';
import { mapOpenAIResponse } from './openai-map-response.js';
import { OpenAIStreamMapper } from './openai-map-stream.js';

/**
 * Reading a chat-completions reply body — JSON, SSE or error — for every adapter whose vendor speaks the
 * OpenAI format (OpenAI, DeepSeek). The adapters differ in the request they build and in how they word
 * errors, not in how a reply is read.
 */

/** How a reply is read beyond the common format. */
export interface OpenAIReplyOptions {
  /** Set when the request searched the web: the reply's annotations become citations, and one search is billed. */
  webSearchQuery?: string;
}

/** A non-stream reply as canonical events, read on first use. */
export function openAICompletionEvents(
  response: UpstreamResponse,
  vendorLabel: string,
  options: OpenAIReplyOptions = {},
): WholeReply {
  return new WholeReply(() => readOpenAICompletion(response, vendorLabel, options));
}

async function readOpenAICompletion(
  response: UpstreamResponse,
  vendorLabel: string,
  options: OpenAIReplyOptions,
): Promise<CanonicalEvent[]> {
  let completion: OpenAIChatCompletion;
  try {
    // JSON.parse skips leading whitespace, so DeepSeek's keep-alive blank lines before the body are harmless.
    completion = (await response.body.json()) as OpenAIChatCompletion;
  } catch (error) {
    throw error instanceof SyntaxError
      ? new GatewayError('upstream_bad_response', `${vendorLabel} sent a reply that is not valid JSON.`)
      : upstreamConnectionError(error);
  }
  if (!Array.isArray(completion?.choices)) {
    throw new GatewayError('upstream_bad_response', `${vendorLabel} sent a reply without choices.`);
  }
  return mapOpenAIResponse(completion, options.webSearchQuery);
}

/** A streamed reply as canonical events; comment lines (`: keep-alive`) are skipped by the SSE decoder. */
export function openAIStreamEvents(
  response: UpstreamResponse,
  vendorLabel: string,
  options: OpenAIReplyOptions = {},
): AsyncIterableIterator<CanonicalEvent> {
  const mapper = new OpenAIStreamMapper(vendorLabel, options.webSearchQuery);
  return streamedReplyEvents(response, vendorLabel, mapper, () => mapper.sawDone);
}

export interface OpenAIErrorSummary {
  message: string | undefined;
  vendorCode: string | undefined;
}

/** The message and code of an OpenAI-shaped error body; both undefined when the body is not one. */
export async function readOpenAIErrorBody(response: UpstreamResponse): Promise<OpenAIErrorSummary> {
  try {
    const parsed = JSON.parse(await response.body.text()) as Partial<OpenAIErrorBody>;
    return { message: parsed.error?.message, vendorCode: parsed.error?.code ?? parsed.error?.type ?? undefined };
  } catch {
    // A non-JSON error body: the status alone decides.
    return { message: undefined, vendorCode: undefined };
  }
}
