import { GatewayError } from '../../canonical/errors.js';
import type { CanonicalEvent, TokenLogprob } from '../../canonical/events.js';
import type { Citation } from '../../canonical/server-tools.js';
import { DeltaTemplate } from '../../streaming/delta-template.js';
import type { SseEvent } from '../../streaming/sse-decoder.js';
import type { OpenAIChatCompletionChunk, OpenAIErrorBody, OpenAIToolCallDelta } from '../../wire/openai-chat-wire.js';
import { choiceBlockPrefix, mapOpenAIFinishReason, mapOpenAIUsage } from './openai-map-response.js';
import { mapOpenAILogprobs } from './openai-logprobs.js';
import { annotationCitations, ONE_SEARCH, webSearchEvents } from './openai-web-search.js';

/**
 * One choice's open blocks. A request with `n` streams several choices, told apart by their `index`; each has its
 * own blocks, named with the choice's prefix so they never mix.
 */
class ChoiceStream {
  textOpen = false;
  /** Text may resume after a tool call; each run is its own block. */
  private textBlockCount = 0;
  /** `text-<count>`, built when a text block opens rather than for every delta. */
  textBlockId: string;
  reasoningOpen = false;
  private readonly openToolBlocks = new Set<string>();
  finished = false;
  /** The text so far, kept only when annotations will index into it (a web search's reply). */
  keptText: string | undefined;
  private readonly prefix: string;
  /** What a block's start event says of its choice: nothing for the first, as with one choice. */
  private readonly tag: { choice?: number };

  constructor(index: number) {
    this.prefix = choiceBlockPrefix(index);
    this.tag = index === 0 ? {} : { choice: index };
    this.textBlockId = `${this.prefix}text-0`;
  }

  reasoning(text: string, out: CanonicalEvent[]): void {
    const blockId = `${this.prefix}reasoning`;
    if (!this.reasoningOpen) {
      this.reasoningOpen = true;
      out.push({ type: 'reasoning-start', blockId, ...this.tag });
    }
    out.push({ type: 'reasoning-delta', blockId, text });
  }

  text(text: string, out: CanonicalEvent[], logprobs?: TokenLogprob[]): void {
    this.openText(out);
    if (this.keptText !== undefined) this.keptText += text;
    out.push(
      logprobs === undefined
        ? { type: 'text-delta', blockId: this.textBlockId, text }
        : { type: 'text-delta', blockId: this.textBlockId, text, logprobs },
    );
  }

  /** Citations of the text so far, on its open block (a new, empty one when none is open). */
  cite(citations: readonly Citation[], out: CanonicalEvent[]): void {
    if (citations.length === 0) return;
    this.openText(out);
    for (const citation of citations) out.push({ type: 'text-citation', blockId: this.textBlockId, citation });
  }

  private openText(out: CanonicalEvent[]): void {
    this.closeReasoning(out);
    if (this.textOpen) return;
    this.textOpen = true;
    this.textBlockCount += 1;
    this.textBlockId = `${this.prefix}text-${this.textBlockCount}`;
    out.push({ type: 'text-start', blockId: this.textBlockId, ...this.tag });
  }

  toolCalls(calls: readonly OpenAIToolCallDelta[], out: CanonicalEvent[]): void {
    for (const call of calls) {
      const blockId = `${this.prefix}tool-${call.index}`;
      if (!this.openToolBlocks.has(blockId)) {
        this.closeReasoning(out);
        this.closeText(out);
        this.openToolBlocks.add(blockId);
        out.push({
          type: 'tool-call-start',
          blockId,
          id: call.id ?? `call_${call.index}`,
          name: call.function?.name ?? '',
          ...this.tag,
        });
      }
      const argumentsDelta = call.function?.arguments;
      if (argumentsDelta) out.push({ type: 'tool-call-delta', blockId, argumentsDelta });
    }
  }

  /** Closes the open blocks, adds `closing` (a web search's blocks), then the finish. */
  finish(reason: string, out: CanonicalEvent[], closing: readonly CanonicalEvent[] = []): void {
    this.closeReasoning(out);
    this.closeText(out);
    for (const blockId of this.openToolBlocks) out.push({ type: 'tool-call-end', blockId });
    this.openToolBlocks.clear();
    out.push(...closing);
    this.finished = true;
    out.push({ type: 'finish', reason: mapOpenAIFinishReason(reason), rawReason: reason, ...this.tag });
  }

  private closeReasoning(out: CanonicalEvent[]): void {
    if (!this.reasoningOpen) return;
    this.reasoningOpen = false;
    out.push({ type: 'reasoning-end', blockId: `${this.prefix}reasoning` });
  }

  private closeText(out: CanonicalEvent[]): void {
    if (!this.textOpen) return;
    this.textOpen = false;
    out.push({ type: 'text-end', blockId: this.textBlockId });
  }
}

/**
 * OpenAI-format SSE (also DeepSeek's) → canonical events. Stateful per response: tool calls are keyed by their
 * `index` inside their choice (never by block position), and a choice's open blocks are closed when its finish
 * arrives.
 */
export class OpenAIStreamMapper {
  private started = false;
  /** The first choice, kept apart: nearly every stream has only it. */
  private readonly first = new ChoiceStream(0);
  /** Choices after the first (made with the first of them: most streams have one). */
  private others: Map<number, ChoiceStream> | undefined;
  private done = false;
  /** The shape of this vendor's plain text deltas (OpenAI's per-chunk padding aside): most of a long stream is read without JSON.parse. */
  private readonly textDeltas = new DeltaTemplate('content', 'obfuscation');

  /** A web search's citations so far, and the id of its call (set when the request searched). */
  private readonly search: { query: string; citations: Citation[]; callId: string } | undefined;

  /** `webSearchQuery`: set when the request searched the web (annotations become citations, one search is billed). */
  constructor(
    private readonly vendorLabel: string,
    webSearchQuery?: string,
  ) {
    if (webSearchQuery === undefined) return;
    this.search = { query: webSearchQuery, citations: [], callId: '' };
    this.first.keptText = '';
  }

  /** Events for one SSE event of the upstream stream. */
  map(event: SseEvent): CanonicalEvent[] {
    if (event.data === '[DONE]') {
      this.done = true;
      return [];
    }
    // A searched reply's text is kept for its annotations: every chunk goes through the full path.
    if (this.started && event.event === undefined && this.search === undefined) {
      const text = this.textDeltas.match(event.data);
      if (text !== undefined) {
        // The common case, a delta of the open text block, as a one-element literal: no array grown per chunk.
        const first = this.first;
        if (first.textOpen && !first.reasoningOpen && text)
          return [{ type: 'text-delta', blockId: first.textBlockId, text }];
        const out: CanonicalEvent[] = [];
        if (text) first.text(text, out);
        return out;
      }
    }
    let chunk: OpenAIChatCompletionChunk & Partial<OpenAIErrorBody>;
    try {
      chunk = JSON.parse(event.data) as OpenAIChatCompletionChunk & Partial<OpenAIErrorBody>;
    } catch {
      throw new GatewayError(
        'upstream_bad_response',
        `${this.vendorLabel} sent a stream chunk that is not valid JSON.`,
      );
    }
    if (chunk.error !== undefined || event.event === 'error') {
      const message = chunk.error?.message ?? 'unknown error';
      throw new GatewayError('upstream_server_error', `${this.vendorLabel} reported an error mid-stream: ${message}`);
    }
    const out: CanonicalEvent[] = [];
    if (!this.started) {
      this.started = true;
      out.push({ type: 'response-start', id: chunk.id, model: chunk.model, created: chunk.created });
      if (this.search !== undefined) this.search.callId = `srvtoolu_${chunk.id}`;
    }
    for (const choice of chunk.choices ?? []) this.mapChoice(choice, out);
    const only = chunk.choices?.length === 1 ? chunk.choices[0] : undefined;
    if (chunk.usage) {
      const usage = mapOpenAIUsage(chunk.usage);
      if (this.search !== undefined) usage.serverToolUse = { ...ONE_SEARCH };
      out.push({ type: 'usage', usage });
    } else if (event.event === undefined && only !== undefined && isPlainTextDelta(only))
      this.textDeltas.learn(event.data, only.delta.content);
    return out;
  }

  private mapChoice(choice: OpenAIChoice, out: CanonicalEvent[]): void {
    const stream = this.choiceStream(choice.index ?? 0);
    const delta = choice.delta ?? {};
    if (delta.reasoning_content) stream.reasoning(delta.reasoning_content, out);
    const text = delta.content || delta.refusal;
    if (text) stream.text(text, out, mapOpenAILogprobs(choice.logprobs));
    if (delta.tool_calls) stream.toolCalls(delta.tool_calls, out);
    const search = stream === this.first ? this.search : undefined;
    if (search !== undefined && delta.annotations) {
      const citations = annotationCitations(delta.annotations, stream.keptText ?? '');
      search.citations.push(...citations);
      stream.cite(citations, out);
    }
    if (choice.finish_reason) {
      const closing = search === undefined ? [] : webSearchEvents(search.query, search.citations, search.callId);
      stream.finish(choice.finish_reason, out, closing);
    }
  }

  private choiceStream(index: number): ChoiceStream {
    if (index === 0) return this.first;
    let stream = this.others?.get(index);
    if (stream === undefined) {
      stream = new ChoiceStream(index);
      this.others ??= new Map();
      this.others.set(index, stream);
    }
    return stream;
  }

  /** Called at the end of the upstream body: a stream cut before its finish is an upstream fault, not a reply. */
  end(): CanonicalEvent[] {
    const unfinished = this.others !== undefined && [...this.others.values()].some((stream) => !stream.finished);
    if (!this.first.finished || unfinished) {
      throw new GatewayError(
        'upstream_bad_response',
        `${this.vendorLabel} ended the stream before the reply was complete.`,
      );
    }
    return [];
  }

  get sawDone(): boolean {
    return this.done;
  }
}

type OpenAIChoice = OpenAIChatCompletionChunk['choices'][number];

/**
 * A choice whose only meaning is its text: the shape `DeltaTemplate` may learn (an event with the same fields and
 * another text maps to that text alone). Only the first choice's (the template's text goes to its block), and not
 * with a refusal (read when the text is empty), reasoning, tool calls, log probabilities or a finish.
 */
function isPlainTextDelta(choice: OpenAIChoice): choice is OpenAIChoice & { delta: { content: string } } {
  const delta = choice.delta;
  return (
    (choice.index ?? 0) === 0 &&
    typeof delta?.content === 'string' &&
    delta.content !== '' &&
    !delta.refusal &&
    !delta.reasoning_content &&
    (delta.tool_calls === undefined || delta.tool_calls === null) &&
    (choice.logprobs === undefined || choice.logprobs === null) &&
    !choice.finish_reason
  );
}
