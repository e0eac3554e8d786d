/**
 * The part of an OpenAI Chat Completions request the simulator reads, as `openai-validate.ts` guarantees
 * it (DeepSeek requests too: same dialect, plus `reasoning_content` and `thinking`). Fields the simulator
 * only validates or ignores are left out; unknown fields are allowed on the wire.
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
  /** DeepSeek thinking mode: the reasoning of a replayed assistant message. */
  reasoning_content?: string | null;
}

export type OpenAiTool =
  | { type: 'function'; function: { name: string; description?: string; parameters?: Record<string, unknown> } }
  | { type: 'custom'; custom: { name: string; description?: string } };

export type OpenAiToolChoice =
  | 'none'
  | 'auto'
  | 'required'
  | { type: 'function'; function: { name: string } }
  | { type: 'custom'; custom: { name: string } }
  | {
      type: 'allowed_tools';
      allowed_tools: { mode: 'auto' | 'required'; tools: Array<{ type: string; function?: { name: string } }> };
    };

export interface OpenAiChatRequest {
  model: string;
  messages: OpenAiMessage[];
  stream?: boolean | null;
  stream_options?: { include_usage?: boolean | null } | null;
  n?: number | null;
  logprobs?: boolean | null;
  top_logprobs?: number | null;
  stop?: string | string[] | null;
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  tools?: OpenAiTool[] | null;
  tool_choice?: OpenAiToolChoice | null;
  parallel_tool_calls?: boolean | null;
  reasoning_effort?: string | null;
  /** DeepSeek: switches thinking mode on non-reasoner models. */
  thinking?: { type?: string } | null;
  /** `json_object` (JSON mode) or `json_schema` (structured output; OpenAI only, DeepSeek refuses it). */
  response_format?: { type?: string; json_schema?: { schema?: unknown } | null } | null;
  /** OpenAI's search models: the reply is searched and cites its pages. */
  web_search_options?: object | null;
}

/** The four keys OpenAI puts in every error body. */
export interface OpenAiErrorDetail {
  message: string;
  type: string;
  param: string | null;
  code: string | null;
}
