/**
 * Wire types of the Anthropic Messages format (docs/protocols/wire-anthropic.md), shared by the
 * client-facing `/v1/messages` protocol and the Anthropic adapter. Only the fields Tollgate reads or writes.
 */

export type AnthropicSource = { type: 'base64'; media_type: string; data: string } | { type: 'url'; url: string };

/** A prompt-cache breakpoint: the prompt up to and including the block that carries it is cached. */
export interface AnthropicCacheControl {
  type: 'ephemeral';
  /** `5m` when absent. */
  ttl?: '5m' | '1h';
  /** Beta members (`scope`, `evict_on_complete`) an Anthropic client sent, forwarded as they are. */
  [member: string]: unknown;
}

export interface AnthropicTextBlock {
  type: 'text';
  text: string;
  cache_control?: AnthropicCacheControl;
  /** In replies: `null` when the text cites nothing. */
  citations?: unknown[] | null;
}
export interface AnthropicImageBlock {
  type: 'image';
  source: AnthropicSource;
  cache_control?: AnthropicCacheControl;
}
export interface AnthropicDocumentBlock {
  type: 'document';
  source: AnthropicSource;
  title?: string;
  cache_control?: AnthropicCacheControl;
}
export interface AnthropicToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  input: unknown;
  /** In replies (required by the current SDK): who made the call, `{type: "direct"}` for the model itself. */
  caller?: { type: string; tool_id?: string };
  cache_control?: AnthropicCacheControl;
}
export interface AnthropicToolResultBlock {
  type: 'tool_result';
  tool_use_id: string;
  content?: string | Array<AnthropicTextBlock | AnthropicImageBlock | AnthropicDocumentBlock>;
  is_error?: boolean;
  cache_control?: AnthropicCacheControl;
}
export interface AnthropicThinkingBlock {
  type: 'thinking';
  thinking: string;
  signature: string;
}
export interface AnthropicRedactedThinkingBlock {
  type: 'redacted_thinking';
  data: string;
}
/** The vendor's call of its own tool (web search…); its input streams as `input_json_delta` like a tool_use's. */
export interface AnthropicServerToolUseBlock {
  type: 'server_tool_use';
  id: string;
  name: string;
  input: unknown;
  caller?: { type: string; tool_id?: string };
  cache_control?: AnthropicCacheControl;
}
/** What a server tool returned (`web_search_tool_result` and kin): arrives whole, relayed whole. */
export interface AnthropicServerToolResultBlock {
  type: `${string}_tool_result`;
  tool_use_id: string;
  content: unknown;
  cache_control?: AnthropicCacheControl;
  [member: string]: unknown;
}
/** Anthropic's own tool (`web_search_20250305`…): sent as the client declared it. */
export type AnthropicServerTool = Record<string, unknown> & { cache_control?: AnthropicCacheControl };

export type AnthropicRequestBlock =
  | AnthropicTextBlock
  | AnthropicImageBlock
  | AnthropicDocumentBlock
  | AnthropicToolUseBlock
  | AnthropicToolResultBlock
  | AnthropicThinkingBlock
  | AnthropicRedactedThinkingBlock
  | AnthropicServerToolUseBlock
  | AnthropicServerToolResultBlock;

export interface AnthropicMessageParam {
  /** `system`: an instruction at its place in the conversation (`SystemMessageParam`, text blocks only). */
  role: 'user' | 'assistant' | 'system';
  content: string | AnthropicRequestBlock[];
}

export interface AnthropicTool {
  name: string;
  description?: string;
  input_schema: Record<string, unknown>;
  strict?: boolean;
  defer_loading?: boolean;
  cache_control?: AnthropicCacheControl;
}

export type AnthropicToolChoice =
  | { type: 'auto'; disable_parallel_tool_use?: boolean }
  | { type: 'any'; disable_parallel_tool_use?: boolean }
  | { type: 'tool'; name: string; disable_parallel_tool_use?: boolean }
  | { type: 'none' };

export type AnthropicThinkingConfig =
  | { type: 'enabled'; budget_tokens: number; display?: 'summarized' | 'omitted' | 'updates' }
  | { type: 'disabled' }
  | { type: 'adaptive'; display?: 'summarized' | 'omitted' | 'updates' }
  | { type: 'between_tools' };

export interface AnthropicOutputConfig {
  effort?: string;
  format?: { type: 'json_schema'; schema: Record<string, unknown> };
  /** Beta members (`task_budget`) an Anthropic client sent, forwarded as they are. */
  [member: string]: unknown;
}

export interface AnthropicMessagesRequest {
  model: string;
  max_tokens: number;
  messages: AnthropicMessageParam[];
  system?: string | AnthropicTextBlock[];
  temperature?: number;
  top_p?: number;
  top_k?: number;
  stop_sequences?: string[];
  stream?: boolean;
  tools?: Array<AnthropicTool | AnthropicServerTool>;
  tool_choice?: AnthropicToolChoice;
  metadata?: { user_id?: string };
  thinking?: AnthropicThinkingConfig;
  output_config?: AnthropicOutputConfig;
  /** Automatic caching: Anthropic places one breakpoint on the last cacheable block. */
  cache_control?: AnthropicCacheControl;
}

export type AnthropicResponseBlock =
  | AnthropicTextBlock
  | AnthropicToolUseBlock
  | AnthropicThinkingBlock
  | AnthropicRedactedThinkingBlock
  | AnthropicServerToolUseBlock
  | AnthropicServerToolResultBlock;

export interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  output_tokens_details?: { thinking_tokens?: number } | null;
  cache_creation?: { ephemeral_5m_input_tokens?: number; ephemeral_1h_input_tokens?: number } | null;
  inference_geo?: string | null;
  server_tool_use?: Record<string, number> | null;
  service_tier?: string | null;
  speed?: string | null;
}

/** `MessageDeltaUsage`: `message_delta`'s cumulative counts. */
export interface AnthropicDeltaUsage {
  input_tokens: number | null;
  output_tokens: number;
  cache_creation_input_tokens: number | null;
  cache_read_input_tokens: number | null;
  output_tokens_details: { thinking_tokens?: number } | null;
  server_tool_use: Record<string, number> | null;
}

export type AnthropicStopReason =
  | 'end_turn'
  | 'max_tokens'
  | 'stop_sequence'
  | 'tool_use'
  | 'pause_turn'
  | 'refusal'
  | 'model_context_window_exceeded';

export interface AnthropicMessage {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: AnthropicResponseBlock[];
  stop_reason: AnthropicStopReason | null;
  stop_sequence: string | null;
  /** Refusal details, code-execution container, cache diagnostics: absent in older replies. */
  stop_details?: unknown;
  container?: unknown;
  diagnostics?: unknown;
  usage: AnthropicUsage;
}

export type AnthropicContentDelta =
  | { type: 'text_delta'; text: string }
  | { type: 'input_json_delta'; partial_json: string }
  | { type: 'thinking_delta'; thinking: string }
  | { type: 'signature_delta'; signature: string }
  | { type: 'citations_delta'; citation: unknown };

export type AnthropicStreamEvent =
  | { type: 'message_start'; message: AnthropicMessage }
  | { type: 'content_block_start'; index: number; content_block: AnthropicResponseBlock }
  | { type: 'content_block_delta'; index: number; delta: AnthropicContentDelta }
  | { type: 'content_block_stop'; index: number }
  | {
      type: 'message_delta';
      delta: { stop_reason: AnthropicStopReason | null; stop_sequence: string | null };
      usage: Partial<AnthropicUsage>;
    }
  | { type: 'message_stop' }
  | { type: 'ping' }
  | { type: 'error'; error: { type: string; message: string } };

export interface AnthropicErrorBody {
  type: 'error';
  error: { type: string; message: string; details?: Readonly<Record<string, unknown>> };
  request_id?: string;
}
