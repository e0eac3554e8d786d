import { postForStream } from './client';
import { sseData } from '../lib/sse-data';

/** The playground's form, as `POST /api/playground/chat` takes it. */
export interface PlaygroundRequest {
  model: string;
  system?: string;
  messages: { role: 'user' | 'assistant'; content: string }[];
  temperature?: number;
  maxTokens?: number;
  reasoningEffort?: 'low' | 'medium' | 'high';
  tools?: { name: string; description?: string; parameters?: Record<string, unknown> }[];
}

export interface PlaygroundToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** One reply as it grows, folded from OpenAI chat-completion chunks. */
export interface PlaygroundReply {
  requestId: string | null;
  model: string;
  text: string;
  reasoning: string;
  toolCalls: PlaygroundToolCall[];
  finishReason: string | null;
  usage: {
    inputTokens: number;
    outputTokens: number;
    reasoningTokens: number;
    cachedTokens: number;
    /** Exact decimal USD, what the usage record says the request cost. */
    costUsd: string | null;
  } | null;
  /** A failure after the reply started, in the API's words. */
  error: { code: string; message: string } | null;
  done: boolean;
}

interface ChatChunk {
  model?: string;
  choices?: {
    delta?: {
      content?: string | null;
      reasoning_content?: string | null;
      tool_calls?: { index: number; id?: string; function?: { name?: string; arguments?: string } }[];
    };
    finish_reason?: string | null;
  }[];
  usage?: {
    prompt_tokens: number;
    completion_tokens: number;
    prompt_tokens_details?: { cached_tokens?: number };
    completion_tokens_details?: { reasoning_tokens?: number };
    cost?: string;
  } | null;
  error?: { code?: string | null; type?: string; message?: string };
}

function fold(reply: PlaygroundReply, chunk: ChatChunk): PlaygroundReply {
  if (chunk.error !== undefined) {
    return {
      ...reply,
      error: { code: chunk.error.code ?? chunk.error.type ?? 'error', message: chunk.error.message ?? '' },
    };
  }
  const next = { ...reply, toolCalls: [...reply.toolCalls] };
  if (chunk.model !== undefined) next.model = chunk.model;
  for (const choice of chunk.choices ?? []) {
    const delta = choice.delta ?? {};
    if (typeof delta.content === 'string') next.text += delta.content;
    if (typeof delta.reasoning_content === 'string') next.reasoning += delta.reasoning_content;
    for (const call of delta.tool_calls ?? []) {
      const current = next.toolCalls[call.index] ?? { id: '', name: '', arguments: '' };
      next.toolCalls[call.index] = {
        id: call.id ?? current.id,
        name: current.name + (call.function?.name ?? ''),
        arguments: current.arguments + (call.function?.arguments ?? ''),
      };
    }
    if (choice.finish_reason != null) next.finishReason = choice.finish_reason;
  }
  if (chunk.usage != null) {
    next.usage = {
      inputTokens: chunk.usage.prompt_tokens,
      outputTokens: chunk.usage.completion_tokens,
      reasoningTokens: chunk.usage.completion_tokens_details?.reasoning_tokens ?? 0,
      cachedTokens: chunk.usage.prompt_tokens_details?.cached_tokens ?? 0,
      costUsd: chunk.usage.cost ?? null,
    };
  }
  return next;
}

/**
 * Sends the form and calls `onUpdate` with the reply so far after each chunk. A refusal before the reply starts
 * (no balance, a limit, a model the key may not use) is thrown as an `ApiError` carrying the API's code and words.
 */
export async function streamPlayground(
  request: PlaygroundRequest,
  signal: AbortSignal,
  onUpdate: (reply: PlaygroundReply) => void,
): Promise<PlaygroundReply> {
  const response = await postForStream('/api/playground/chat', request, signal);
  let reply: PlaygroundReply = {
    requestId: response.headers.get('x-request-id'),
    model: request.model,
    text: '',
    reasoning: '',
    toolCalls: [],
    finishReason: null,
    usage: null,
    error: null,
    done: false,
  };
  onUpdate(reply);
  if (response.body === null) return reply;
  for await (const data of sseData(response.body)) {
    if (data === '[DONE]') break;
    reply = fold(reply, JSON.parse(data) as ChatChunk);
    onUpdate(reply);
  }
  reply = { ...reply, done: true };
  onUpdate(reply);
  return reply;
}
