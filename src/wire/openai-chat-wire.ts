/**
 * Wire types of the OpenAI Chat Completions format (docs/protocols/wire-openai-chat.md), shared by the
 * client-facing protocol and the OpenAI and DeepSeek adapters. Only the fields Tollgate reads or writes.
 */

export interface OpenAITextPart {
  type: 'text';
  text: string;
}

export interface OpenAIImagePart {
  type: 'image_url';
  image_url: { url: string; detail?: 'auto' | 'low' | 'high' };
}

/** A document given inline (chat completions take files only as `file_data` or an uploaded `file_id`, no URL). */
export interface OpenAIFilePart {
  type: 'file';
  file: { file_data: string; filename: string };
}

export type OpenAIContentPart = OpenAITextPart | OpenAIImagePart | OpenAIFilePart;

export interface OpenAIToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export type OpenAIMessage =
  | { role: 'system' | 'developer'; content: string | OpenAITextPart[]; name?: string }
  | { role: 'user'; content: string | OpenAIContentPart[]; name?: string }
  | {
      role: 'assistant';
      content: string | OpenAITextPart[] | null;
      tool_calls?: OpenAIToolCall[];
      name?: string;
      /** DeepSeek's reasoning text, replayed in tool loops. */
      reasoning_content?: string;
    }
  | { role: 'tool'; content: string | OpenAITextPart[]; tool_call_id: string };

export interface OpenAIUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: { cached_tokens?: number; cache_write_tokens?: number } | null;
  completion_tokens_details?: { reasoning_tokens?: number } | null;
  /** DeepSeek's cache split of prompt_tokens. */
  prompt_cache_hit_tokens?: number;
  prompt_cache_miss_tokens?: number;
}

/** One token of a choice's `logprobs.content` (`top_logprobs` empty unless the request asked for alternatives). */
export interface OpenAITokenLogprob {
  token: string;
  logprob: number;
  bytes: number[] | null;
  top_logprobs: Array<{ token: string; logprob: number; bytes: number[] | null }>;
}

/** A choice's `logprobs`: null unless the request set `logprobs: true`. */
export interface OpenAIChoiceLogprobs {
  content: OpenAITokenLogprob[] | null;
  refusal?: OpenAITokenLogprob[] | null;
}

export interface OpenAIChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: Array<{
    index: number;
    message: {
      role: 'assistant';
      content: string | null;
      refusal?: string | null;
      reasoning_content?: string | null;
      tool_calls?: OpenAIToolCall[];
      /** Pages a web search found, each with the span of `content` it supports. */
      annotations?: unknown[];
    };
    finish_reason: string | null;
    logprobs?: OpenAIChoiceLogprobs | null;
  }>;
  usage?: OpenAIUsage;
  system_fingerprint?: string;
}

export interface OpenAIToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function?: { name?: string; arguments?: string };
}

export interface OpenAIChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: Array<{
    index: number;
    delta: {
      role?: 'assistant';
      content?: string | null;
      refusal?: string | null;
      reasoning_content?: string | null;
      tool_calls?: OpenAIToolCallDelta[];
      /** A search model's `url_citation` annotations, indexing into the whole message's content. */
      annotations?: unknown[];
    };
    finish_reason: string | null;
    logprobs?: OpenAIChoiceLogprobs | null;
  }>;
  usage?: OpenAIUsage | null;
}

export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}
