import type { Attributes } from '@opentelemetry/api';
import { responseChoices, type CanonicalResponse, type ResponseBlock } from '../canonical/accumulate.js';
import type { CanonicalRequest, ContentBlock } from '../canonical/request.js';
import { finishReasonName, GEN_AI } from './genai-attributes.js';

/**
 * Prompts and replies in the GenAI conventions' message shape (`{ role, parts: [{ type, … }] }`), recorded only
 * when the operator sets OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true. Inline media is named by its
 * type and size, never copied: a span is no place for megabytes of base64.
 */
type MessagePart = Record<string, unknown> & { type: string };

export function inputMessageAttributes(request: CanonicalRequest): Attributes {
  const attributes: Attributes = {};
  if (request.system.length > 0)
    attributes[GEN_AI.systemInstructions] = JSON.stringify(
      request.system.map((block) => ({ type: 'text', content: block.text })),
    );
  const messages = request.messages.map((message) => {
    // Tool results travel in user messages; the conventions give them a role of their own.
    const toolTurn = message.content.length > 0 && message.content.every((block) => block.type === 'tool-result');
    return { role: toolTurn ? 'tool' : message.role, parts: message.content.map(inputPart) };
  });
  attributes[GEN_AI.inputMessages] = JSON.stringify(messages);
  return attributes;
}

export function outputMessageAttributes(response: CanonicalResponse): Attributes {
  const messages = responseChoices(response).map((choice) => ({
    role: 'assistant',
    parts: choice.content.map(outputPart),
    finish_reason: choice.finishReason === null ? 'error' : finishReasonName(choice.finishReason),
  }));
  return { [GEN_AI.outputMessages]: JSON.stringify(messages) };
}

function inputPart(block: ContentBlock): MessagePart {
  switch (block.type) {
    case 'image':
    case 'document':
      return block.source.kind === 'url'
        ? { type: 'uri', modality: block.type, uri: block.source.url }
        : { type: 'blob', modality: block.type, mime_type: block.source.mediaType, size: block.source.data.length };
    case 'tool-result':
      return {
        type: 'tool_call_response',
        id: block.toolCallId,
        response: block.content.map((part) => (part.type === 'text' ? part.text : `[${part.type}]`)).join('\n'),
      };
    default:
      return outputPart(block);
  }
}

function outputPart(block: ResponseBlock): MessagePart {
  switch (block.type) {
    case 'text':
      return { type: 'text', content: block.text };
    case 'reasoning':
      return { type: 'reasoning', content: block.text };
    case 'tool-call':
      return { type: 'tool_call', id: block.id, name: block.name, arguments: block.argumentsJson };
    case 'server-tool-call':
      return { type: 'tool_call', id: block.id, name: block.name, arguments: block.input };
    case 'server-tool-result':
      return { type: 'tool_call_response', id: block.toolCallId, response: block.resultType };
  }
}
