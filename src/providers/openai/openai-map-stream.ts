import { GatewayError } from '../../canonical/errors.js';
import type { CanonicalEvent } from '../../canonical/events.js';
import { DeltaTemplate } from '../../streaming/delta-template.js';
import type { SseEvent } from '../../streaming/sse-decoder.js';
import type { OpenAIChatCompletionChunk, OpenAIErrorBody } from '../../wire/openai-chat-wire.js';
import { mapOpenAIFinishReason, mapOpenAIUsage } from './openai-map-response.js';

/**
 * OpenAI-format SSE (also DeepSeek's) → canonical events. Stateful per response: tool calls are keyed by their
 * `index` inside this response (never by block position), and open blocks are closed when the finish arrives.
 */
export class OpenAIStreamMapper {
  private started = false;
  private textOpen = false;
  /** Text may resume after a tool call; each run is its own block. */
  private textBlockCount = 0;
  /** `text-<count>`, built when a text block opens rather than for every delta. */
  private textBlockId = 'text-0';
  private reasoningOpen = false;
  private readonly openToolBlocks = new Set<string>();
  private finished = false;
  private done = false;
  /** The shape of this vendor's plain text deltas (OpenAI's per-chunk padding aside): most of a long stream is read without JSON.parse. */
  private readonly textDeltas = new DeltaTemplate('content', 'obfuscation');

  constructor(private readonly vendorLabel: string) {}

  /** Events for one SSE event of the upstream stream. */
  map(event: SseEvent): CanonicalEvent[] {
    if (event.data === '[DONE]') {
      this.done = true;
      return [];
    }
    if (this.started && event.event === undefined) {
      const text = this.textDeltas.match(event.data);
      if (text !== undefined) {
        // The common case, a delta of the open text block, as a one-element literal: no array grown per chunk.
        if (this.textOpen && !this.reasoningOpen && text)
          return [{ type: 'text-delta', blockId: this.textBlockId, text }];
        const out: CanonicalEvent[] = [];
        if (text) this.text(text, out);
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
    }
    const choice = chunk.choices?.[0];
    if (choice !== undefined) {
      const delta = choice.delta ?? {};
      if (delta.reasoning_content) {
        if (!this.reasoningOpen) {
          this.reasoningOpen = true;
          out.push({ type: 'reasoning-start', blockId: 'reasoning' });
        }
        out.push({ type: 'reasoning-delta', blockId: 'reasoning', text: delta.reasoning_content });
      }
      const text = delta.content || delta.refusal;
      if (text) this.text(text, out);
      if (delta.tool_calls) this.mapToolCalls(delta.tool_calls, out);
      if (choice.finish_reason) {
        this.closeAll(out);
        this.finished = true;
        out.push({
          type: 'finish',
          reason: mapOpenAIFinishReason(choice.finish_reason),
          rawReason: choice.finish_reason,
        });
      }
    }
    if (chunk.usage) out.push({ type: 'usage', usage: mapOpenAIUsage(chunk.usage) });
    else if (event.event === undefined && choice !== undefined && isPlainTextDelta(choice))
      this.textDeltas.learn(event.data, choice.delta.content);
    return out;
  }

  private text(text: string, out: CanonicalEvent[]): void {
    this.closeReasoning(out);
    if (!this.textOpen) {
      this.textOpen = true;
      this.textBlockCount += 1;
      this.textBlockId = `text-${this.textBlockCount}`;
      out.push({ type: 'text-start', blockId: this.textBlockId });
    }
    out.push({ type: 'text-delta', blockId: this.textBlockId, text });
  }

  /** Called at the end of the upstream body: a stream cut before its finish is an upstream fault, not a reply. */
  end(): CanonicalEvent[] {
    if (!this.finished) {
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

  private mapToolCalls(
    calls: NonNullable<OpenAIChatCompletionChunk['choices'][number]['delta']['tool_calls']>,
    out: CanonicalEvent[],
  ): void {
    for (const call of calls) {
      const blockId = `tool-${call.index}`;
      if (!this.openToolBlocks.has(blockId)) {
        this.closeReasoning(out);
        this.closeText(out);
        this.openToolBlocks.add(blockId);
        out.push({
          type: 'tool-call-start',
          blockId,
          id: call.id ?? `call_${call.index}`,
          name: call.function?.name ?? '',
        });
      }
      const argumentsDelta = call.function?.arguments;
      if (argumentsDelta) out.push({ type: 'tool-call-delta', blockId, argumentsDelta });
    }
  }

  private closeReasoning(out: CanonicalEvent[]): void {
    if (!this.reasoningOpen) return;
    this.reasoningOpen = false;
    out.push({ type: 'reasoning-end', blockId: 'reasoning' });
  }

  private closeText(out: CanonicalEvent[]): void {
    if (!this.textOpen) return;
    this.textOpen = false;
    out.push({ type: 'text-end', blockId: this.textBlockId });
  }

  private closeAll(out: CanonicalEvent[]): void {
    this.closeReasoning(out);
    this.closeText(out);
    for (const blockId of this.openToolBlocks) out.push({ type: 'tool-call-end', blockId });
    this.openToolBlocks.clear();
  }
}

type OpenAIChoice = OpenAIChatCompletionChunk['choices'][number];

/**
 * A choice whose only meaning is its text: the shape `DeltaTemplate` may learn (an event with the same fields and
 * another text maps to that text alone). Not with a refusal (read when the text is empty), reasoning, tool calls
 * or a finish.
 */
function isPlainTextDelta(choice: OpenAIChoice): choice is OpenAIChoice & { delta: { content: string } } {
  const delta = choice.delta;
  return (
    typeof delta?.content === 'string' &&
    delta.content !== '' &&
    !delta.refusal &&
    !delta.reasoning_content &&
    (delta.tool_calls === undefined || delta.tool_calls === null) &&
    !choice.finish_reason
  );
}
