import { invalidRequest } from '../../canonical/errors.js';
import type {
  CanonicalMessage,
  CanonicalRequest,
  ContentBlock,
  DocumentBlock,
  ImageBlock,
  ReasoningBlock,
  TextBlock,
  ToolCallBlock,
  ToolResultBlock,
} from '../../canonical/request.js';
import type {
  AnthropicDocumentBlock,
  AnthropicImageBlock,
  AnthropicMessageParam,
  AnthropicRequestBlock,
  AnthropicTextBlock,
  AnthropicToolResultBlock,
  AnthropicToolUseBlock,
} from '../../wire/anthropic-messages-wire.js';
import { withCacheControl } from './anthropic-prompt-cache.js';
import { anthropicCitation } from '../../wire/anthropic-server-blocks.js';
import { encodeServerToolResultParam, encodeServerToolUseParam } from './anthropic-server-blocks.js';

/** The conversation part of an Anthropic Messages body. */
export interface BuiltAnthropicConversation {
  system: AnthropicTextBlock[];
  messages: Array<AnthropicMessageParam & { content: AnthropicRequestBlock[] }>;
}

export interface BuildConversationOptions {
  /** Thinking is on for this request: signed Anthropic reasoning is replayed; otherwise every reasoning block is dropped. */
  replayReasoning: boolean;
}

interface BuildContext extends BuildConversationOptions {
  /** Server-tool calls whose results are Anthropic's own: the only ones Anthropic takes back as calls. */
  replayableServerCalls: ReadonlySet<string>;
}

/** The only image types Anthropic accepts; anything else is refused here rather than by the vendor. */
const IMAGE_MEDIA_TYPES: ReadonlySet<string> = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);

type WireMessage = BuiltAnthropicConversation['messages'][number];

/**
 * Canonical system + messages → Anthropic `system` and `messages`, applying the translation rules that concern the
 * conversation itself: empty text dropped (docs/protocols/translation.md#empty-text-blocks), messages left empty
 * dropped, same-role runs merged, tool results first in their user message
 * (docs/protocols/translation.md#one-user-message-per-tool-turn), tool ids sanitised alike in calls and results
 * (docs/protocols/translation.md#tool-ids-anthropic-refuses), reasoning replayed only when signed by Anthropic
 * (docs/protocols/translation.md#signed-thinking-in-tool-loops, #reasoning-replayed-only-to-its-vendor).
 */
export function buildAnthropicConversation(
  request: CanonicalRequest,
  options: BuildConversationOptions,
): BuiltAnthropicConversation {
  const system = request.system
    .filter(hasText)
    .map((block) => withCacheControl<AnthropicTextBlock>({ type: 'text', text: block.text }, block.cache));
  const messages: WireMessage[] = [];
  const context: BuildContext = { ...options, replayableServerCalls: anthropicServerCalls(request) };
  request.messages.forEach((message, index) => {
    const role = message.role;
    const content = buildContent(message, `messages[${index}]`, context);
    if (content.length === 0) return;
    const previous = messages[messages.length - 1];
    // Anthropic merges same-role runs itself, but doing it here lets tool results be ordered within the merged turn.
    // A system message (`SystemMessageParam`) keeps its own place: it is an instruction, not part of a turn.
    if (previous !== undefined && previous.role === role && role !== 'system') previous.content.push(...content);
    else messages.push({ role, content });
  });
  for (const message of messages) if (message.role === 'user') message.content = toolResultsFirst(message.content);
  if (messages.length === 0) {
    throw invalidRequest(
      'The request has no message with content: at least one non-empty message is required.',
      'messages',
    );
  }
  return { system, messages };
}

/** Ids of the server-tool calls answered by a result Anthropic produced (another family's search goes as text). */
function anthropicServerCalls(request: CanonicalRequest): Set<string> {
  const ids = new Set<string>();
  for (const message of request.messages)
    for (const block of message.content)
      if (block.type === 'server-tool-result' && block.anthropicBlock !== undefined) ids.add(block.toolCallId);
  return ids;
}

/** `^[a-zA-Z0-9_-]+$` is all Anthropic accepts; the same rewrite is applied to calls and to their results. */
export function sanitizeAnthropicToolId(id: string): string {
  const sanitized = id.replace(/[^a-zA-Z0-9_-]/g, '_');
  return sanitized === '' ? 'toolu_missing_id' : sanitized;
}

function buildContent(message: CanonicalMessage, param: string, options: BuildContext): AnthropicRequestBlock[] {
  if (message.role === 'system') {
    // Mid-conversation system messages are Anthropic's own (`role: "system"`, text blocks), kept where they are.
    return message.content
      .filter((block): block is TextBlock => block.type === 'text' && hasText(block))
      .map((block) => withCacheControl<AnthropicTextBlock>({ type: 'text', text: block.text }, block.cache));
  }
  const role = message.role;
  const out: AnthropicRequestBlock[] = [];
  message.content.forEach((block, index) => {
    const converted = buildBlock(block, role, `${param}.content[${index}]`, options);
    if (converted !== undefined) out.push(converted);
  });
  return out;
}

function buildBlock(
  block: ContentBlock,
  role: 'user' | 'assistant',
  param: string,
  options: BuildContext,
): AnthropicRequestBlock | undefined {
  switch (block.type) {
    case 'text':
      return hasText(block) ? withCacheControl<AnthropicTextBlock>(buildText(block), block.cache) : undefined;
    case 'server-tool-call':
      return options.replayableServerCalls.has(block.id)
        ? withCacheControl(encodeServerToolUseParam(block), block.cache)
        : undefined;
    case 'server-tool-result':
      return withCacheControl(encodeServerToolResultParam(block, param), block.cache);
    case 'image':
      return withCacheControl(buildImage(block, param), block.cache);
    case 'document':
      return withCacheControl(buildDocument(block), block.cache);
    case 'tool-call':
      return withCacheControl(buildToolUse(block, param), block.cache);
    case 'tool-result':
      return withCacheControl(buildToolResult(block, param), block.cache);
    case 'reasoning':
      // Reasoning only ever belongs to an assistant turn; anywhere else it cannot be replayed.
      return role === 'assistant' && options.replayReasoning ? buildReasoning(block) : undefined;
  }
}

/** A text block, with the sources it cites when it came from a reply that cited them. */
function buildText(block: TextBlock): AnthropicTextBlock {
  if (block.citations === undefined || block.citations.length === 0) return { type: 'text', text: block.text };
  return { type: 'text', text: block.text, citations: block.citations.map(anthropicCitation) };
}

function hasText(block: TextBlock): boolean {
  return block.text.trim() !== '';
}

function buildImage(block: ImageBlock, param: string): AnthropicImageBlock | AnthropicDocumentBlock {
  if (block.source.kind === 'url') return { type: 'image', source: { type: 'url', url: block.source.url } };
  const mediaType =
    block.source.mediaType.toLowerCase() === 'image/jpg' ? 'image/jpeg' : block.source.mediaType.toLowerCase();
  // A PDF given as an image data URL (OpenAI clients have no other inline form for it) is a document to Anthropic.
  if (mediaType === 'application/pdf') {
    return { type: 'document', source: { type: 'base64', media_type: mediaType, data: block.source.data } };
  }
  if (!IMAGE_MEDIA_TYPES.has(mediaType)) {
    throw invalidRequest(
      `The image in '${param}' has media type '${block.source.mediaType}'; this model accepts only image/jpeg, image/png, image/gif and image/webp.`,
      param,
    );
  }
  return { type: 'image', source: { type: 'base64', media_type: mediaType, data: block.source.data } };
}

function buildDocument(block: DocumentBlock): AnthropicDocumentBlock {
  const source =
    block.source.kind === 'url'
      ? { type: 'url' as const, url: block.source.url }
      : { type: 'base64' as const, media_type: block.source.mediaType, data: block.source.data };
  return block.title === undefined ? { type: 'document', source } : { type: 'document', source, title: block.title };
}

function buildToolUse(block: ToolCallBlock, param: string): AnthropicToolUseBlock {
  return {
    type: 'tool_use',
    id: sanitizeAnthropicToolId(block.id),
    name: block.name,
    input: parseToolArguments(block, param),
  };
}

/**
 * Anthropic wants the arguments as an object. `""` (a call with no arguments) is `{}`; anything that is not a
 * JSON object is refused with a 400 naming the message, because guessing would replay a call the model never made.
 */
function parseToolArguments(block: ToolCallBlock, param: string): Record<string, unknown> {
  if (block.argumentsJson.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(block.argumentsJson);
  } catch {
    throw invalidRequest(`The arguments of tool call '${block.id}' in '${param}' are not valid JSON.`, param);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw invalidRequest(`The arguments of tool call '${block.id}' in '${param}' must be a JSON object.`, param);
  }
  return parsed as Record<string, unknown>;
}

function buildToolResult(block: ToolResultBlock, param: string): AnthropicToolResultBlock {
  const content: Array<AnthropicTextBlock | AnthropicImageBlock | AnthropicDocumentBlock> = [];
  block.content.forEach((part, index) => {
    if (part.type === 'text') {
      if (hasText(part))
        content.push(withCacheControl<AnthropicTextBlock>({ type: 'text', text: part.text }, part.cache));
    } else {
      content.push(withCacheControl(buildImage(part, `${param}.content[${index}]`), part.cache));
    }
  });
  const result: AnthropicToolResultBlock = {
    type: 'tool_result',
    tool_use_id: sanitizeAnthropicToolId(block.toolCallId),
  };
  // An empty result is sent without content: an empty text block would be refused
  // (docs/protocols/translation.md#empty-text-blocks).
  if (content.length > 0) result.content = content;
  if (block.isError) result.is_error = true;
  return result;
}

/**
 * Only reasoning Anthropic signed can go back to Anthropic
 * (docs/protocols/translation.md#reasoning-replayed-only-to-its-vendor): unsigned reasoning and other vendors'
 * signatures are dropped. Redacted reasoning exists only at Anthropic, so it is kept unless tagged as foreign.
 */
function buildReasoning(block: ReasoningBlock): AnthropicRequestBlock | undefined {
  if (block.redactedData !== undefined) {
    return block.originVendor === undefined || block.originVendor === 'anthropic'
      ? { type: 'redacted_thinking', data: block.redactedData }
      : undefined;
  }
  if (block.originVendor !== 'anthropic' || block.signature === undefined || block.signature === '') return undefined;
  return { type: 'thinking', thinking: block.text, signature: block.signature };
}

/**
 * Anthropic expects every tool_result of a turn before any other content of that user message
 * (docs/protocols/translation.md#one-user-message-per-tool-turn).
 */
function toolResultsFirst(content: AnthropicRequestBlock[]): AnthropicRequestBlock[] {
  const results = content.filter((block) => block.type === 'tool_result');
  if (results.length === 0) return content;
  return [...results, ...content.filter((block) => block.type !== 'tool_result')];
}

/**
 * With thinking on, Anthropic requires the assistant turn holding the latest tool_use to start with its signed
 * thinking (docs/protocols/translation.md#signed-thinking-in-tool-loops). True when that turn exists and lacks it: the
 * request cannot use thinking as it stands.
 */
export function lastToolTurnLacksThinking(messages: readonly WireMessage[]): boolean {
  for (let index = messages.length - 1; index >= 0; index--) {
    const message = messages[index]!;
    if (message.role !== 'assistant') continue;
    if (!message.content.some((block) => block.type === 'tool_use')) return false;
    const first = message.content[0];
    return first === undefined || (first.type !== 'thinking' && first.type !== 'redacted_thinking');
  }
  return false;
}
