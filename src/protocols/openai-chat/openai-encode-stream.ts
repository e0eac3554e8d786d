import type { Citation } from '../../canonical/server-tools.js';
import { urlCitationAnnotation } from './openai-encode-annotations.js';
import type { GatewayError } from '../../canonical/errors.js';
import type { CanonicalEvent, TokenLogprob } from '../../canonical/events.js';
import type { CanonicalUsage } from '../../canonical/usage.js';
import { flatCopy } from '../../canonical/flat-string.js';
import { SSE_DONE, sseData } from '../../streaming/sse-writer.js';
import { encodeOpenAIFinishReason, type OpenAIResponseContext } from './openai-encode-response.js';
import { encodeOpenAIError } from './openai-encode-error.js';
import { encodeOpenAIUsage } from './openai-encode-usage.js';
import { encodeOpenAILogprobs } from '../shared/openai-logprobs.js';

/** What the encoder tracks of one choice: its tool calls' indexes, and whether its role chunk went out. */
interface ChoiceState {
  index: number;
  toolIndexes: Map<string, number>;
  sawToolCall: boolean;
  roleSent: boolean;
}

/**
 * Canonical events → OpenAI `chat.completion.chunk` SSE frames (docs/protocols/wire-openai-chat.md#stream): per
 * choice the role chunk first, content / tool-call chunks, the finish chunk; then the usage chunk when the client
 * asked for it, `[DONE]` last. A reply with several choices (`n`) tells them apart by the choice's `index`.
 */
export class OpenAIChatStreamEncoder {
  private readonly prefix: string;
  /** A content delta's frame around its JSON string, made once: per chunk it is then two concatenations. */
  private readonly contentHead: string;
  private readonly contentTail: string;
  private readonly first: ChoiceState = newChoice(0);
  /** Choices after the first, and the choice of each of their blocks (made with the first: most replies have one). */
  private others: Map<number, ChoiceState> | undefined;
  private blockChoices: Map<string, ChoiceState> | undefined;
  /** Characters of the first choice's content sent so far: where a text block starts. */
  private textLength = 0;
  /**
   * The first choice's latest text block, kept to place its citations (a web search's sources). Its text is copied
   * flat once in a while (`compact`): grown delta by delta it would keep every chunk the vendor sent.
   */
  private textBlock: { blockId: string; offset: number; text: string; citations: Citation[] } = {
    blockId: '',
    offset: 0,
    text: '',
    citations: [],
  };

  /** The kept text's length at the last `compact`. */
  private compactedLength = 0;

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
        return this.roleChunk(this.first);
      case 'text-start': {
        const choice = this.open(event.blockId, event.choice);
        if (choice === this.first)
          this.textBlock = { blockId: event.blockId, offset: this.textLength, text: '', citations: [] };
        return this.roleChunk(choice);
      }
      case 'reasoning-start':
        return this.roleChunk(this.open(event.blockId, event.choice));
      case 'text-delta': {
        const choice = this.blockChoices?.get(event.blockId) ?? this.first;
        if (choice === this.first) {
          this.textLength += event.text.length;
          if (this.textBlock.blockId === event.blockId) this.textBlock.text += event.text;
        }
        if (choice === this.first && event.logprobs === undefined)
          // The delta's JSON written out rather than stringified from an object: this runs for every chunk.
          // The same bytes as this.deltaChunk(this.first, {content: …}).
          return this.roleChunk(choice) + this.contentHead + JSON.stringify(event.text) + this.contentTail;
        return this.roleChunk(choice) + this.deltaChunk(choice, { content: event.text }, event.logprobs);
      }
      case 'reasoning-delta': {
        const choice = this.blockChoices?.get(event.blockId) ?? this.first;
        return this.roleChunk(choice) + this.deltaChunk(choice, { reasoning_content: event.text });
      }
      case 'tool-call-start': {
        const choice = this.open(event.blockId, event.choice);
        const index = choice.toolIndexes.size;
        choice.toolIndexes.set(event.blockId, index);
        choice.sawToolCall = true;
        return (
          this.roleChunk(choice) +
          this.deltaChunk(choice, {
            tool_calls: [{ index, id: event.id, type: 'function', function: { name: event.name, arguments: '' } }],
          })
        );
      }
      case 'tool-call-delta': {
        const choice = this.blockChoices?.get(event.blockId) ?? this.first;
        const index = choice.toolIndexes.get(event.blockId) ?? 0;
        return this.deltaChunk(choice, { tool_calls: [{ index, function: { arguments: event.argumentsDelta } }] });
      }
      case 'finish': {
        const choice = this.choice(event.choice);
        const reason = JSON.stringify(encodeOpenAIFinishReason(event.reason, choice.sawToolCall));
        return (
          this.roleChunk(choice) +
          this.chunk(`"choices":[{"index":${choice.index},"delta":{},"finish_reason":${reason}}]`)
        );
      }
      case 'error':
        return this.error(event.error);
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

  /** The text kept for citations as one flat string; nothing when no delta came since the last time. */
  compact(): void {
    if (this.textBlock.text.length === this.compactedLength) return;
    this.textBlock.text = flatCopy(this.textBlock.text);
    this.compactedLength = this.textBlock.text.length;
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
    return this.roleChunk(this.first) + this.deltaChunk(this.first, { annotations });
  }

  /** The choice a block belongs to, remembered for its deltas (the first choice's blocks need no entry). */
  private open(blockId: string, index: number | undefined): ChoiceState {
    const choice = this.choice(index);
    if (choice !== this.first) {
      this.blockChoices ??= new Map();
      this.blockChoices.set(blockId, choice);
    }
    return choice;
  }

  private choice(index: number | undefined): ChoiceState {
    if (index === undefined || index === 0) return this.first;
    let choice = this.others?.get(index);
    if (choice === undefined) {
      choice = newChoice(index);
      this.others ??= new Map();
      this.others.set(index, choice);
    }
    return choice;
  }

  private roleChunk(choice: ChoiceState): string {
    if (choice.roleSent) return '';
    choice.roleSent = true;
    return this.deltaChunk(choice, { role: 'assistant', content: '' });
  }

  private deltaChunk(choice: ChoiceState, delta: Record<string, unknown>, logprobs?: readonly TokenLogprob[]): string {
    const logprobsField =
      logprobs === undefined
        ? ''
        : `,"logprobs":${JSON.stringify({ content: encodeOpenAILogprobs(logprobs), refusal: null })}`;
    return this.chunk(
      `"choices":[{"index":${choice.index},"delta":${JSON.stringify(delta)}${logprobsField},"finish_reason":null}]`,
    );
  }

  /** With include_usage, OpenAI sends `usage: null` on every chunk but the last. */
  private chunk(rest: string): string {
    return sseData(`${this.prefix}${rest}${this.includeUsage ? ',"usage":null' : ''}}`);
  }
}

function newChoice(index: number): ChoiceState {
  return { index, toolIndexes: new Map(), sawToolCall: false, roleSent: false };
}
