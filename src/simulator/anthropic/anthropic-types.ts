/**
 * The part of an Anthropic Messages request the simulator reads, as `anthropic-validate.ts` guarantees it.
 * The simulator keeps its own types rather than the gateway's wire types: it is the independent oracle
 * the gateway is tested against.
 */

export type AnthropicSource =
  | { type: 'base64'; media_type: string; data: string }
  | { type: 'url'; url: string }
  | { type: 'file'; file_id: string }
  | { type: 'text'; media_type: string; data: string }
  | { type: 'content'; content: string | AnthropicBlock[] };

export type AnthropicBlock =
  | { type: 'text'; text: string }
  | { type: 'image'; source: AnthropicSource }
  | { type: 'document'; source: AnthropicSource }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }
  | { type: 'tool_result'; tool_use_id: string; content?: string | AnthropicBlock[]; is_error?: boolean }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string }
  /** Server-tool and search blocks the simulator accepts but never produces. */
  | { type: 'other'; [key: string]: unknown };

export interface AnthropicMessage {
  role: 'user' | 'assistant' | 'system';
  content: string | AnthropicBlock[];
}

export interface AnthropicTool {
  name: string;
  /** Absent on server tools (typed `web_search_…` and the like), which the simulator never calls. */
  input_schema?: Record<string, unknown>;
  type?: string;
}

export type AnthropicToolChoice =
  | { type: 'auto'; disable_parallel_tool_use?: boolean }
  | { type: 'any'; disable_parallel_tool_use?: boolean }
  | { type: 'tool'; name: string; disable_parallel_tool_use?: boolean }
  | { type: 'none' };

export interface AnthropicRequest {
  model: string;
  max_tokens: number;
  messages: AnthropicMessage[];
  system?: string | Array<{ type: 'text'; text: string }>;
  stop_sequences?: string[];
  stream?: boolean;
  tools?: AnthropicTool[];
  tool_choice?: AnthropicToolChoice;
  thinking?:
    | { type: 'enabled'; budget_tokens: number }
    | { type: 'disabled' }
    | { type: 'adaptive' }
    | { type: 'between_tools' };
  output_config?: { effort?: string; format?: { type: 'json_schema'; schema: Record<string, unknown> } };
}
