/**
 * The part of an OpenAI Chat Completions request the simulator reads, as `openai-validate.ts` guarantees
 * it. Fields the simulator only validates or ignores are left out; unknown fields are allowed on the wire.
 */

export interface OpenAiContentPart {
  type: 'text' | 'refusal' | 'image_url' | 'input_audio' | 'file';
  text?: string;
  refusal?: string;
}

export interface OpenAiToolCall {
  id: string;
  type: 'function' | 'custom';
  function?: { name: string; arguments: string };
  custom?: { name: string; input: string };
}

export interface OpenAiMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool' | 'function';
  content?: string | OpenAiContentPart[] | null;
  name?: string;
  tool_calls?: OpenAiToolCall[];
  tool_call_id?: string;
}

export interface OpenAiChatRequest {
  model: string;
  messages: OpenAiMessage[];
  stream?: boolean | null;
  stream_options?: { include_usage?: boolean | null } | null;
  n?: number | null;
  stop?: string | string[] | null;
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  tools?: unknown[];
}

/** The four keys OpenAI puts in every error body. */
export interface OpenAiErrorDetail {
  message: string;
  type: string;
  param: string | null;
  code: string | null;
}
