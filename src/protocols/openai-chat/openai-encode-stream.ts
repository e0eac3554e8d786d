import type { Citation } from '../../canonical/server-tools.js';
import { urlCitationAnnotation } from './openai-encode-annotations.js';
import type { GatewayError } from '../../canonical/errors.js';
import type { CanonicalEvent } from '../../canonical/events.js';
import type { CanonicalUsage } from '../../canonical/usage.js';
import { SSE_DONE, sseData } from '../../streaming/sse-writer.js';
import { encodeOpenAIFinishReason, type OpenAIResponseContext } from './openai-encode-response.js';
import { encodeOpenAIError } from './openai-encode-error.js';
import { encodeOpenAIUsage } from './openai-encode-usage.js';

/**
 * Canonical events → OpenAI `chat.completion.chunk` SSE frames (docs/protocols/wire-openai-chat.md#stream): the role
 * chunk first, content / tool-call chunks, the finish chunk, the usage chunk when the client asked for it, `[DONE]`
 * last.
 */
export class OpenAIChatStreamEncoder {
  private readonly prefix: string;
  /** A content delta's frame around its JSON string, made once: per chunk it is then two concatenations. */
  private readonly contentHead: string;
  private readonly contentTail: string;
  private readonly toolIndexes = new Map<string, number>();
  private sawToolCall = false;
  /** Characters of content sent so far: where a text block starts. */
  private textLength = 0;
  /** The latest text block, kept to place its citations. */
  private textBlock: { blockId: string; offset: number; text: string; citations: Citation[] } = {
    blockId: '',
    offset: 0,
    text: '',
    citations: [],
  };
  private roleSent = false;

  constructor(
    context: OpenAIResponseContext,
    private readonly includeUsage: boolean,
    created = Math.floor(Date.now() / 1000),
  ) {
    // Every chunk shares id/object/created/model: serialise that head once.
    this.prefix = `{"id":${JSON.stringify(context.id)},"object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(context.model)},`;
    this.contentHead = `data: ${this.prefix}"choices":[{"index":0,"delta":{"content":`;
    this.contentTail = `},"finish_reason":null}]${includeUsage ? ',"usage":null' : ''}}\n\n`;
  }

  /** The SSE text for one event ('' when the event has no OpenAI form). */
  encode(event: CanonicalEvent): string {
    switch (event.type) {
      case 'response-start':
        return this.roleChunk();
      case 'text-delta':
        this.textLength += event.text.length;
        if (this.textBlock.blockId === event.blockId) this.textBlock.text += event.text;
        // The delta's JSON written out rather than stringified from an object: this runs for every chunk.
        // The same bytes as this.chunk(`"choices":[{"index":0,"delta":{"content":…}},"finish_reason":null}]`).
        return this.roleChunk() + this.contentHead + JSON.stringify(event.text) + this.contentTail;
      case 'reasoning-delta':
        return (
          this.roleChunk() +
          this.chunk(
            `"choices":[{"index":0,"delta":{"reasoning_content":${JSON.stringify(event.text)}},"finish_reason":null}]`,
          )
        );
      case 'tool-call-start': {
        const index = this.toolIndexes.size;
        this.toolIndexes.set(event.blockId, index);
        this.sawToolCall = true;
        return (
          this.roleChunk() +
          this.deltaChunk({
            tool_calls: [{ index, id: event.id, type: 'function', function: { name: event.name, arguments: '' } }],
          })
        );
      }
      case 'tool-call-delta': {
        const index = this.toolIndexes.get(event.blockId) ?? 0;
        return this.deltaChunk({ tool_calls: [{ index, function: { arguments: event.argumentsDelta } }] });
      }
      case 'finish':
        return (
          this.roleChunk() +
          this.chunk(
            `"choices":[{"index":0,"delta":{},"finish_reason":${JSON.stringify(encodeOpenAIFinishReason(event.reason, this.sawToolCall))}}]`,
          )
        );
      case 'error':
        return this.error(event.error);
      case 'text-start':
        this.textBlock = { blockId: event.blockId, offset: this.textLength, text: '', citations: [] };
        return '';
      case 'text-citation':
        if (this.textBlock.blockId === event.blockId && event.citation.url !== '')
          this.textBlock.citations.push(event.citation);
        return '';
      case 'text-end':
        return this.annotations(event.blockId);
      default:
        return '';
    }
  }

  /** The closing frames: the usage chunk (when asked for) and `[DONE]`. */
  finish(usage: CanonicalUsage, costNano?: bigint): string {
    const usageChunk = this.includeUsage
      ? sseData(`${this.prefix}"choices":[],"usage":${JSON.stringify(encodeOpenAIUsage(usage, costNano))}}`)
      : '';
    return usageChunk + SSE_DONE;
  }

  /** A mid-stream failure as the SDKs recognise it: a data line with a top-level `error` object. */
  error(error: GatewayError): string {
    return sseData(JSON.stringify(encodeOpenAIError(error))) + SSE_DONE;
  }

  /** The citations of a text block, once it ended and its span is known (Anthropic cites before the text). */
  private annotations(blockId: string): string {
    const block = this.textBlock;
    if (block.blockId !== blockId || block.citations.length === 0) return '';
    const annotations = block.citations.map((citation) => urlCitationAnnotation(citation, block.text, block.offset));
    return this.roleChunk() + this.deltaChunk({ annotations });
  }

  private roleChunk(): string {
    if (this.roleSent) return '';
    this.roleSent = true;
    return this.deltaChunk({ role: 'assistant', content: '' });
  }

  private deltaChunk(delta: Record<string, unknown>): string {
    return this.chunk(`"choices":[{"index":0,"delta":${JSON.stringify(delta)},"finish_reason":null}]`);
  }

  /** With include_usage, OpenAI sends `usage: null` on every chunk but the last. */
  private chunk(rest: string): string {
    return sseData(`${this.prefix}${rest}${this.includeUsage ? ',"usage":null' : ''}}`);
  }
}
