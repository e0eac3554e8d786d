import { invalidRequest } from '../../canonical/errors.js';
import type {
  CanonicalMessage,
  CanonicalRequest,
  ImageSource,
  ReasoningBlock,
  ToolCallBlock,
  ToolResultBlock,
} from '../../canonical/request.js';
import { guessMimeType } from './gemini-mime-type.js';
import { decodeGeminiToolCallId } from './gemini-tool-call-id.js';
import type { GeminiContent, GeminiPart, GeminiRole } from '../../wire/gemini-generate-wire.js';

/**
 * Canonical system blocks and messages → Gemini `systemInstruction` and `contents`
 * (docs/protocols/translation.md#roles-and-system-prompts, #content-parts-and-images, #tool-calls,
 * #tool-results). Policies:
 * - A system message placed mid-conversation keeps its place as user text under a `[System message]` marker:
 *   hoisting it into `systemInstruction` would make it apply to turns that came before it.
 * - Consecutive same-role contents are merged (Gemini has rejected non-alternating turns).
 * - Each step's tool results become ONE user content holding exactly one `functionResponse` per call of the
 *   preceding model content, in call order (docs/protocols/translation.md#one-gemini-function-response-per-call), named
 *   after that call (docs/protocols/translation.md#gemini-function-response-names). A call the client sent no result
 *   for gets `{error: …}` so the counts still match; a result answering no call of the preceding model content is a
 *   400, as Gemini (and Anthropic) would answer.
 * - `functionResponse.response` is `{output: text}`, or `{error: text}` for a failed tool. The text is not
 *   parsed as JSON even when it is some: the model reads JSON text as well, and parsing would round large
 *   integers and reorder nothing useful. Images of a result follow the response parts as `inlineData`.
 * - Tool-call arguments that are not a JSON object (a reply cut short) are sent as `{_raw: text}`: Gemini needs
 *   an object, and refusing would strand a conversation the model itself produced.
 * - Reasoning is replayed as a thought part only when Gemini signed it; all other reasoning is dropped
 *   (docs/protocols/translation.md#reasoning-replayed-only-to-its-vendor).
 * - Empty text is dropped (Gemini rejects empty parts), and so is a content left without parts.
 */

export interface GeminiContentsOptions {
  /**
   * Put a placeholder `thoughtSignature` on the first call of a model step that has none (a history from another
   * vendor, or from before signatures existed). Gemini 3 rejects such steps otherwise; Google documents the
   * placeholder for exactly this case.
   */
  placeholderSignatures: boolean;
}

export interface BuiltGeminiContents {
  systemInstruction: { parts: GeminiPart[] } | undefined;
  contents: GeminiContent[];
  /** Client fields with no Gemini slot that were left out (`detail`, `name`). */
  droppedParameters: string[];
}

/**
 * Google's documented stand-in for a signature that was never issued
 * (docs/protocols/wire-gemini.md#parts-and-function-calling).
 */
export const PLACEHOLDER_THOUGHT_SIGNATURE = 'skip_thought_signature_validator';

const SYSTEM_MESSAGE_MARKER = '[System message]\n';
const IMAGE_ONLY_RESULT = 'The tool returned the attached image.';
const MISSING_RESULT = 'The client sent no result for this call.';

interface PendingCall {
  /** The tool-call id as the client knows it. */
  id: string;
  name: string;
  geminiId: string | undefined;
}

/** A content being assembled: tool results stay apart from parts until they are paired with their calls. */
interface Draft {
  role: GeminiRole;
  parts: GeminiPart[];
  calls: PendingCall[];
  results: ToolResultBlock[];
}

export function buildGeminiContents(request: CanonicalRequest, options: GeminiContentsOptions): BuiltGeminiContents {
  const dropped = new Set<string>();
  const systemParts = request.system
    .filter((block) => block.text !== '')
    .map((block): GeminiPart => ({ text: block.text }));
  const drafts: Draft[] = [];
  for (const message of request.messages) {
    if (message.name !== undefined) dropped.add('name');
    const draft = draftOf(message, dropped);
    if (draft.parts.length === 0 && draft.results.length === 0) continue;
    const previous = drafts[drafts.length - 1];
    if (previous?.role === draft.role) {
      previous.parts.push(...draft.parts);
      previous.calls.push(...draft.calls);
      previous.results.push(...draft.results);
    } else {
      drafts.push(draft);
    }
  }
  const contents: GeminiContent[] = [];
  let previousCalls: PendingCall[] = [];
  for (const draft of drafts) {
    if (draft.role === 'model') {
      if (options.placeholderSignatures) addPlaceholderSignature(draft.parts);
      contents.push({ role: 'model', parts: draft.parts });
      previousCalls = draft.calls;
    } else {
      contents.push({ role: 'user', parts: [...answerCalls(previousCalls, draft.results), ...draft.parts] });
      previousCalls = [];
    }
  }
  return {
    systemInstruction: systemParts.length > 0 ? { parts: systemParts } : undefined,
    contents,
    droppedParameters: [...dropped],
  };
}

function draftOf(message: CanonicalMessage, dropped: Set<string>): Draft {
  const draft: Draft = { role: message.role === 'assistant' ? 'model' : 'user', parts: [], calls: [], results: [] };
  if (message.role === 'system') {
    const text = message.content
      .flatMap((block) => (block.type === 'text' && block.text !== '' ? [block.text] : []))
      .join('\n\n');
    if (text !== '') draft.parts.push({ text: SYSTEM_MESSAGE_MARKER + text });
    return draft;
  }
  for (const block of message.content) {
    switch (block.type) {
      case 'text':
        if (block.text !== '') draft.parts.push({ text: block.text });
        break;
      case 'image':
        if (block.detail !== undefined) dropped.add('detail');
        if (draft.role === 'user') draft.parts.push(mediaPart(block.source, 'image'));
        break;
      case 'document':
        if (draft.role === 'user') draft.parts.push(mediaPart(block.source, 'document'));
        break;
      case 'tool-call':
        if (draft.role === 'model') draft.parts.push(functionCallPart(block, draft.calls));
        break;
      case 'tool-result':
        if (draft.role === 'user') draft.results.push(block);
        break;
      case 'reasoning': {
        const part = draft.role === 'model' ? thoughtPart(block) : undefined;
        if (part !== undefined) draft.parts.push(part);
        break;
      }
    }
  }
  return draft;
}

function mediaPart(source: ImageSource, kind: 'image' | 'document'): GeminiPart {
  if (source.kind === 'base64') return { inlineData: { mimeType: source.mediaType, data: source.data } };
  return { fileData: { mimeType: guessMimeType(source.url, kind), fileUri: source.url } };
}

/** The call as Gemini sent it: its own id (if it gave one) and its signature come back out of our tool-call id. */
function functionCallPart(block: ToolCallBlock, calls: PendingCall[]): GeminiPart {
  const { geminiId, thoughtSignature } = decodeGeminiToolCallId(block.id);
  calls.push({ id: block.id, name: block.name, geminiId });
  const part: GeminiPart = {
    functionCall: {
      name: block.name,
      args: parseArguments(block.argumentsJson),
      ...(geminiId === undefined ? {} : { id: geminiId }),
    },
  };
  if (thoughtSignature !== undefined) part.thoughtSignature = thoughtSignature;
  return part;
}

function parseArguments(json: string): Record<string, unknown> {
  if (json.trim() === '') return {};
  try {
    const value: unknown = JSON.parse(json);
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // Falls through to the raw form below.
  }
  return { _raw: json };
}

function thoughtPart(block: ReasoningBlock): GeminiPart | undefined {
  if (block.originVendor !== 'gemini' || block.signature === undefined || block.signature === '') return undefined;
  return { text: block.text, thought: true, thoughtSignature: block.signature };
}

/** Exactly one response per call of the preceding model step, in call order; results first in the user content. */
function answerCalls(calls: readonly PendingCall[], results: readonly ToolResultBlock[]): GeminiPart[] {
  const unanswered = [...results];
  const responses: GeminiPart[] = [];
  const images: GeminiPart[] = [];
  for (const call of calls) {
    const index = unanswered.findIndex((result) => result.toolCallId === call.id);
    const result = index < 0 ? undefined : unanswered.splice(index, 1)[0];
    let response: Record<string, unknown>;
    if (result === undefined) {
      response = { error: MISSING_RESULT };
    } else {
      const text = result.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n');
      const resultImages = result.content.flatMap((part) =>
        part.type === 'image' ? [mediaPart(part.source, 'image')] : [],
      );
      images.push(...resultImages);
      const value = text === '' && resultImages.length > 0 ? IMAGE_ONLY_RESULT : text;
      response = result.isError ? { error: value } : { output: value };
    }
    responses.push({
      functionResponse: { name: call.name, response, ...(call.geminiId === undefined ? {} : { id: call.geminiId }) },
    });
  }
  const stray = unanswered[0];
  if (stray !== undefined) {
    throw invalidRequest(
      `A tool result for '${stray.toolCallId}' does not answer any tool call of the assistant message just before it; each tool result must follow the assistant message that made the call, once.`,
    );
  }
  return [...responses, ...images];
}

function addPlaceholderSignature(parts: GeminiPart[]): void {
  const firstCall = parts.find((part) => part.functionCall !== undefined);
  if (firstCall !== undefined && firstCall.thoughtSignature === undefined)
    firstCall.thoughtSignature = PLACEHOLDER_THOUGHT_SIGNATURE;
}
