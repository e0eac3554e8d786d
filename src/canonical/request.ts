/**
 * The canonical request: what every client protocol decodes into and every provider adapter encodes from.
 * It knows nothing of HTTP or of any vendor's field names.
 */

import type { ClientJsonBody } from './client-json-body.js';
import type { Citation, ServerToolCallBlock, ServerToolDefinition, ServerToolResultBlock } from './server-tools.js';

export type VendorName = 'anthropic' | 'openai' | 'gemini' | 'deepseek';

/**
 * A prompt-cache breakpoint (Anthropic's `cache_control`): the prompt up to and including the block that carries it
 * is cached for `ttl`. Only Anthropic-wire vendors honour breakpoints; the others cache prefixes on their own.
 */
export interface CacheBreakpoint {
  ttl: '5m' | '1h';
  /** Other members an Anthropic client gave its `cache_control` (beta `scope`, `evict_on_complete`), sent to Anthropic as they are. */
  anthropicFields?: Readonly<Record<string, unknown>>;
}

export interface TextBlock {
  type: 'text';
  text: string;
  cache?: CacheBreakpoint;
  /** Sources the text cites (web search results), when the vendor that wrote it said. */
  citations?: Citation[];
}

export type ImageSource = { kind: 'base64'; mediaType: string; data: string } | { kind: 'url'; url: string };

export interface ImageBlock {
  type: 'image';
  source: ImageSource;
  /** OpenAI's `detail` hint; dropped by vendors that have no equivalent. */
  detail?: 'auto' | 'low' | 'high';
  cache?: CacheBreakpoint;
}

/** A PDF or other document given to the model as input. */
export interface DocumentBlock {
  type: 'document';
  source: ImageSource;
  title?: string;
  cache?: CacheBreakpoint;
}

export interface ToolCallBlock {
  type: 'tool-call';
  id: string;
  name: string;
  /** The arguments as JSON text, exactly as the model produced them (may be invalid JSON when truncated). */
  argumentsJson: string;
  cache?: CacheBreakpoint;
}

export interface ToolResultBlock {
  type: 'tool-result';
  toolCallId: string;
  content: Array<TextBlock | ImageBlock>;
  isError: boolean;
  cache?: CacheBreakpoint;
}

export interface ReasoningBlock {
  type: 'reasoning';
  text: string;
  /** Opaque signature; only meaningful to the vendor that produced it. */
  signature?: string;
  /** Vendor whose signature this is: reasoning is replayed with its signature only to that vendor. */
  originVendor?: VendorName;
  /** Anthropic's `redacted_thinking` payload: encrypted reasoning with no readable text. */
  redactedData?: string;
}

export type ContentBlock =
  | TextBlock
  | ImageBlock
  | DocumentBlock
  | ToolCallBlock
  | ToolResultBlock
  | ReasoningBlock
  | ServerToolCallBlock
  | ServerToolResultBlock;

/**
 * Roles: `system` appears in `messages` only for a system/developer message placed after the conversation
 * started (leading ones are hoisted into `CanonicalRequest.system`). Tool results travel as `tool-result`
 * blocks inside `user` messages, one user message per tool turn.
 */
export interface CanonicalMessage {
  role: 'system' | 'user' | 'assistant';
  content: ContentBlock[];
  /** OpenAI's optional participant name. */
  name?: string;
}

export interface ToolDefinition {
  name: string;
  description?: string;
  /** JSON Schema of the arguments object. */
  parameters?: Record<string, unknown>;
  strict?: boolean;
  cache?: CacheBreakpoint;
  /**
   * Anthropic's `defer_loading`: the definition stays out of the prompt until the model finds it with tool search,
   * so it costs nothing until then. Forwarded to Anthropic; other vendors load every tool.
   */
  deferLoading?: boolean;
}

/**
 * `validated` on `auto`: Gemini's VALIDATED mode (the model chooses, and any call it makes is checked against its
 * schema); sent to Gemini as VALIDATED, to other vendors as their `auto`.
 */
export type ToolChoice =
  | { type: 'auto'; validated?: boolean }
  | { type: 'none' }
  | { type: 'required' }
  | { type: 'tool'; name: string };

export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; name: string; description?: string; schema?: Record<string, unknown>; strict?: boolean };

export interface SamplingParameters {
  temperature?: number;
  topP?: number;
  topK?: number;
  stop?: string[];
  seed?: number;
  presencePenalty?: number;
  frequencyPenalty?: number;
}

/**
 * Several replies to one prompt (OpenAI's `n`, Gemini's `candidateCount`). `param` is the field as the client named
 * it, so that a vendor that cannot give as many is refused with the client's own field name.
 */
export interface ChoiceCount {
  count: number;
  param: string;
}

/**
 * Log probabilities of the output tokens (OpenAI's `logprobs` / `top_logprobs`, Gemini's `responseLogprobs` /
 * `logprobs`): `topCandidates` alternatives per token (0: only the chosen token's). `param` as in `ChoiceCount`.
 */
export interface LogprobsRequest {
  topCandidates: number;
  param: string;
}

export interface ReasoningParameters {
  /** False when the client explicitly turned reasoning off (Anthropic `thinking: {type: "disabled"}`). */
  enabled?: boolean;
  /** OpenAI's `reasoning_effort`: none, minimal, low, medium, high, xhigh, max. */
  effort?: string;
  /** Anthropic's `thinking.budget_tokens`. */
  budgetTokens?: number;
  /**
   * How the model paces its reasoning when no budget is given: Anthropic's `thinking: {type: "adaptive"}` (it
   * decides how much) or `{type: "between_tools"}` (it thinks only between tool calls). Vendors without such a
   * mode reason as they do by default.
   */
  mode?: 'adaptive' | 'between-tools';
  /**
   * How the reasoning text comes back (Anthropic's `thinking.display`): `omitted` means not at all; `summarized` and
   * the beta `updates` are Anthropic's forms of showing it.
   */
  display?: 'summarized' | 'omitted' | 'updates';
}

/**
 * The `anthropic-beta` header of an Anthropic client, carried in `extensions` under this key: forwarded to Anthropic
 * as the header, dropped (and listed under this name) for other vendors.
 */
export const ANTHROPIC_BETA_EXTENSION = 'anthropic-beta';
/** Members of Anthropic's `output_config` with no canonical meaning (e.g. `task_budget`), as extensions named so. */
export const OUTPUT_CONFIG_EXTENSION_PREFIX = 'output_config.';
/** The `?beta=true` query flag of `client.beta.messages` calls, forwarded to Anthropic only. */
export const ANTHROPIC_BETA_QUERY_EXTENSION = '?beta=true';

export interface CanonicalRequest {
  /** The public model id the client asked for (catalog key). */
  model: string;
  /**
   * Public models the client asks to be tried in order after `model` when its vendor fails before the first byte
   * (the chat `models` extension); replaces the operator's chain for this request.
   */
  fallbackModels?: string[];
  system: TextBlock[];
  messages: CanonicalMessage[];
  tools?: ToolDefinition[];
  /** Tools the vendor runs itself (web search…), apart from the client's function tools. */
  serverTools?: ServerToolDefinition[];
  toolChoice?: ToolChoice;
  parallelToolCalls?: boolean;
  sampling: SamplingParameters;
  maxOutputTokens?: number;
  responseFormat?: ResponseFormat;
  reasoning?: ReasoningParameters;
  user?: string;
  /** OpenAI's `safety_identifier`: a stable hash of the end user, kept apart from `user`. */
  safetyIdentifier?: string;
  /** More than one reply wanted; absent means one. */
  choices?: ChoiceCount;
  logprobs?: LogprobsRequest;
  stream: boolean;
  /** Anthropic's top-level `cache_control`: the vendor places one breakpoint itself (automatic caching). */
  cache?: CacheBreakpoint;
  /** OpenAI's `prompt_cache_key`: requests with the same key are routed to the same prompt cache. */
  promptCacheKey?: string;
  /** OpenAI's `prompt_cache_retention` (`in_memory` or `24h`). */
  promptCacheRetention?: string;
  /**
   * Fields of the client's own protocol with no canonical meaning (e.g. OpenAI `logit_bias`, `store`).
   * Forwarded only to an upstream that speaks the same protocol; dropped (and reported) otherwise.
   */
  extensions: Record<string, unknown>;
  /** Which client protocol produced `extensions`, so adapters know whether they may forward them. */
  extensionsProtocol: ClientProtocol;
  /**
   * The client's body as received, when it was large enough to keep: an adapter of the same wire format reuses
   * the bytes of the members its body repeats unchanged (`src/providers/vendor-json-body.ts`).
   */
  clientBody?: ClientJsonBody;
}

/** The client-facing APIs the gateway speaks; each has a decoder and encoder under protocols/. */
export type ClientProtocol = 'openai-chat' | 'anthropic-messages' | 'openai-responses' | 'gemini-generate';

/**
 * The media an upstream model can be given beyond text and inline images. A client protocol whose parts carry any
 * MIME type (Google's `inlineData` and `fileData`) checks them against this, so a refusal names the client's field.
 */
export interface MediaInput {
  /** Images by URL. */
  imageUrls: boolean;
  /** PDFs as inline data. */
  inlinePdfs: boolean;
  /** PDFs by URL. */
  pdfUrls: boolean;
  /** Any other MIME type (audio, video…), inline or by URL, passed on as a document of that type. */
  otherTypes: boolean;
}

/** How many replies the request asks for (1 unless it asked for several). */
export function choiceCount(request: Pick<CanonicalRequest, 'choices'>): number {
  return request.choices?.count ?? 1;
}
