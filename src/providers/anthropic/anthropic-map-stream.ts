import { GatewayError } from '../../canonical/errors.js';
import { promptSideUsage } from '../../canonical/usage.js';
import type { CanonicalEvent } from '../../canonical/events.js';
import { DeltaTemplate } from '../../streaming/delta-template.js';
import type { SseEvent } from '../../streaming/sse-decoder.js';
import type {
  AnthropicContentDelta,
  AnthropicResponseBlock,
  AnthropicStreamEvent,
  AnthropicUsage,
} from '../../wire/anthropic-messages-wire.js';
import { anthropicStreamError } from './anthropic-map-error.js';
import {
  anthropicBlockId,
  anthropicFinishEvent,
  citationEvents,
  serverToolResultEvent,
  mapAnthropicUsage,
  type AnthropicMappingOptions,
} from './anthropic-map-response.js';

/** What the mapper knows of one content block, by Anthropic's index. */
type BlockState =
  /** Text opens on its first non-empty piece, so an empty text block produces nothing (as in the non-stream mapping). */
  | { kind: 'text'; blockId: string; opened: boolean }
  | { kind: 'reasoning'; blockId: string }
  /** A tool call, or (`asText`) the JSON-mode tool whose input is the reply's text. */
  | { kind: 'tool'; blockId: string; asText: boolean; startInput: unknown; sawArguments: boolean }
  /** The vendor's call of its own tool: its input arrives as JSON text, relayed whole at the block's stop. */
  | { kind: 'server-call'; blockId: string; id: string; name: string; startInput: unknown; json: string }
  /** Blocks that arrive whole (server-tool results) and block types the gateway does not know. */
  | { kind: 'ignored' };

/**
 * Anthropic Messages SSE → canonical events, one instance per response. Blocks are named after their content index
 * (`b0`, `b1` …), matching `mapAnthropicMessage`, so a folded stream equals the non-stream reply. Usage counts in
 * `message_delta` are cumulative: the latest wins, and one usage event goes out at `message_stop`.
 */
export class AnthropicStreamMapper {
  private started = false;
  private finished = false;
  private readonly blocks = new Map<number, BlockState>();
  private usage: Partial<AnthropicUsage> = {};
  private stopReason: string | null = null;
  private stopSequence: string | null = null;
  private jsonReplies = 0;
  private toolCalls = 0;
  /** The shape of this vendor's text deltas and the block they were for: most of a long stream is read without JSON.parse. */
  private readonly textDeltas = new DeltaTemplate('text');
  private textDeltaIndex = -1;

  constructor(
    private readonly vendorLabel: string,
    private readonly options: AnthropicMappingOptions,
  ) {}

  /** True once `message_stop` arrived: nothing may follow it. */
  get complete(): boolean {
    return this.finished;
  }

  /** Events for one SSE event of the upstream stream. */
  map(sse: SseEvent): CanonicalEvent[] {
    if (this.finished) return [];
    if (this.started) {
      const text = this.textDeltas.match(sse.data);
      if (text !== undefined) {
        const state = this.blocks.get(this.textDeltaIndex);
        if (state?.kind !== 'text' || !text) return [];
        // The common case, a delta of an opened block, as a one-element literal: no array grown per chunk.
        if (state.opened) return [{ type: 'text-delta', blockId: state.blockId, text }];
        const out: CanonicalEvent[] = [];
        this.text(state, text, out);
        return out;
      }
    }
    let event: AnthropicStreamEvent;
    try {
      event = JSON.parse(sse.data) as AnthropicStreamEvent;
    } catch {
      throw new GatewayError(
        'upstream_bad_response',
        `${this.vendorLabel} sent a stream event that is not valid JSON.`,
      );
    }
    // The JSON repeats the event name in `type`; the `event:` line is the fallback for a body that omits it.
    const type = typeof event?.type === 'string' ? event.type : sse.event;
    if (type === 'error')
      throw anthropicStreamError(
        this.vendorLabel,
        (event as Partial<Extract<AnthropicStreamEvent, { type: 'error' }>>).error,
      );
    if (type === 'ping') return [];
    if (type === 'message_start')
      return this.messageStart(event as Extract<AnthropicStreamEvent, { type: 'message_start' }>);
    if (!this.started) {
      throw new GatewayError(
        'upstream_bad_response',
        `${this.vendorLabel} sent '${String(type)}' before 'message_start'.`,
      );
    }
    const out: CanonicalEvent[] = [];
    switch (type) {
      case 'content_block_start': {
        const { index, content_block } = event as Extract<AnthropicStreamEvent, { type: 'content_block_start' }>;
        this.blockStart(index, content_block, out);
        break;
      }
      case 'content_block_delta': {
        const { index, delta } = event as Extract<AnthropicStreamEvent, { type: 'content_block_delta' }>;
        this.blockDelta(index, delta, out);
        if (isPlainTextDelta(event, delta)) {
          this.textDeltas.learn(sse.data, delta.text);
          this.textDeltaIndex = index;
        }
        break;
      }
      case 'content_block_stop':
        this.blockStop((event as Extract<AnthropicStreamEvent, { type: 'content_block_stop' }>).index, out);
        break;
      case 'message_delta': {
        const { delta, usage } = event as Extract<AnthropicStreamEvent, { type: 'message_delta' }>;
        if (delta?.stop_reason !== undefined && delta.stop_reason !== null) this.stopReason = delta.stop_reason;
        if (delta?.stop_sequence !== undefined && delta.stop_sequence !== null) this.stopSequence = delta.stop_sequence;
        this.mergeUsage(usage);
        break;
      }
      case 'message_stop':
        // Blocks a well-formed stream has already stopped; closing leftovers keeps the event stream balanced.
        for (const index of [...this.blocks.keys()]) this.blockStop(index, out);
        this.finished = true;
        out.push(
          anthropicFinishEvent(this.stopReason, this.stopSequence, this.jsonReplies > 0 && this.toolCalls === 0),
        );
        out.push({ type: 'usage', usage: mapAnthropicUsage(this.usage) });
        break;
      default:
        // Event types added to the API later are ignored, as the SDK does.
        break;
    }
    return out;
  }

  /** Called at the end of the upstream body: a stream cut before `message_stop` is an upstream fault, not a reply. */
  end(): CanonicalEvent[] {
    if (!this.finished) {
      throw new GatewayError(
        'upstream_bad_response',
        `${this.vendorLabel} ended the stream before the reply was complete.`,
      );
    }
    return [];
  }

  private messageStart(event: Extract<AnthropicStreamEvent, { type: 'message_start' }>): CanonicalEvent[] {
    if (this.started) return [];
    const message = event.message;
    if (message === undefined || message === null || typeof message.id !== 'string') {
      throw new GatewayError('upstream_bad_response', `${this.vendorLabel} sent a 'message_start' without a message.`);
    }
    this.started = true;
    this.mergeUsage(message.usage);
    // The prompt's counts are final here (Anthropic's `message_start`); output is a placeholder until the end.
    const inputUsage = promptSideUsage(mapAnthropicUsage(this.usage));
    return [
      { type: 'response-start', id: message.id, model: message.model, created: this.options.created, inputUsage },
    ];
  }

  private blockStart(index: number, block: AnthropicResponseBlock, out: CanonicalEvent[]): void {
    const blockId = anthropicBlockId(index);
    switch (block?.type) {
      case 'text': {
        const state: BlockState = { kind: 'text', blockId, opened: false };
        this.blocks.set(index, state);
        this.text(state, block.text, out);
        return;
      }
      case 'thinking':
        this.blocks.set(index, { kind: 'reasoning', blockId });
        out.push({ type: 'reasoning-start', blockId });
        if (block.thinking) out.push({ type: 'reasoning-delta', blockId, text: block.thinking });
        if (block.signature) out.push({ type: 'reasoning-signature', blockId, signature: block.signature });
        return;
      case 'redacted_thinking':
        // Arrives complete here, with no deltas.
        this.blocks.set(index, { kind: 'reasoning', blockId });
        out.push({ type: 'reasoning-start', blockId, redactedData: block.data });
        return;
      case 'tool_use': {
        const asText = block.name === this.options.jsonToolName;
        this.blocks.set(index, { kind: 'tool', blockId, asText, startInput: block.input, sawArguments: false });
        if (asText) this.jsonReplies += 1;
        else {
          this.toolCalls += 1;
          out.push({ type: 'tool-call-start', blockId, id: block.id, name: block.name });
        }
        return;
      }
      case 'server_tool_use':
        this.blocks.set(index, {
          kind: 'server-call',
          blockId,
          id: block.id,
          name: block.name,
          startInput: block.input,
          json: '',
        });
        return;
      default:
        this.blocks.set(index, { kind: 'ignored' });
        // A server tool's result arrives whole here, with no deltas.
        if (typeof block?.tool_use_id === 'string') out.push(serverToolResultEvent(blockId, block));
        return;
    }
  }

  private blockDelta(index: number, delta: AnthropicContentDelta, out: CanonicalEvent[]): void {
    const state = this.blocks.get(index);
    if (state === undefined || state.kind === 'ignored') return;
    switch (delta?.type) {
      case 'text_delta':
        if (state.kind === 'text') this.text(state, delta.text, out);
        return;
      case 'thinking_delta':
        if (state.kind === 'reasoning' && delta.thinking)
          out.push({ type: 'reasoning-delta', blockId: state.blockId, text: delta.thinking });
        return;
      case 'signature_delta':
        if (state.kind === 'reasoning' && delta.signature)
          out.push({ type: 'reasoning-signature', blockId: state.blockId, signature: delta.signature });
        return;
      case 'input_json_delta':
        // The first piece is often "": nothing to send (and a text block must not open on it).
        if (state.kind === 'tool' && delta.partial_json) this.toolArguments(state, delta.partial_json, out);
        else if (state.kind === 'server-call') state.json += delta.partial_json ?? '';
        return;
      case 'citations_delta':
        // A citation comes before the text it supports: the block opens on it.
        if (state.kind === 'text') {
          if (!state.opened) {
            state.opened = true;
            out.push({ type: 'text-start', blockId: state.blockId });
          }
          out.push(...citationEvents(state.blockId, [delta.citation]));
        }
        return;
      default:
        // Future delta types are not relayed.
        return;
    }
  }

  private blockStop(index: number, out: CanonicalEvent[]): void {
    const state = this.blocks.get(index);
    if (state === undefined) return;
    this.blocks.delete(index);
    switch (state.kind) {
      case 'text':
        if (state.opened) out.push({ type: 'text-end', blockId: state.blockId });
        return;
      case 'reasoning':
        out.push({ type: 'reasoning-end', blockId: state.blockId });
        return;
      case 'tool':
        // No argument deltas (a call without arguments): the start block's input is the whole input. The `{}`
        // placeholder is only ever sent here, never ahead of deltas
        // (docs/protocols/translation.md#anthropic-stream-to-canonical-events).
        if (!state.sawArguments) this.toolArguments(state, JSON.stringify(state.startInput ?? {}), out);
        out.push(
          state.asText
            ? { type: 'text-end', blockId: state.blockId }
            : { type: 'tool-call-end', blockId: state.blockId },
        );
        return;
      case 'server-call':
        out.push({
          type: 'server-tool-call',
          blockId: state.blockId,
          id: state.id,
          name: state.name,
          input: parseServerInput(state.json, state.startInput),
        });
        return;
      case 'ignored':
        return;
    }
  }

  private text(state: Extract<BlockState, { kind: 'text' }>, text: string | undefined, out: CanonicalEvent[]): void {
    if (!text) return;
    if (!state.opened) {
      state.opened = true;
      out.push({ type: 'text-start', blockId: state.blockId });
    }
    out.push({ type: 'text-delta', blockId: state.blockId, text });
  }

  private toolArguments(state: Extract<BlockState, { kind: 'tool' }>, json: string, out: CanonicalEvent[]): void {
    if (state.asText) {
      if (!state.sawArguments) out.push({ type: 'text-start', blockId: state.blockId });
      out.push({ type: 'text-delta', blockId: state.blockId, text: json });
    } else {
      out.push({ type: 'tool-call-delta', blockId: state.blockId, argumentsDelta: json });
    }
    state.sawArguments = true;
  }

  /** Counts are cumulative: a later value replaces an earlier one; absent or null fields keep what was known. */
  private mergeUsage(usage: Partial<AnthropicUsage> | undefined | null): void {
    if (usage === undefined || usage === null) return;
    const merged: Record<string, unknown> = { ...this.usage };
    for (const [key, value] of Object.entries(usage)) if (value !== null && value !== undefined) merged[key] = value;
    this.usage = merged as Partial<AnthropicUsage>;
  }
}

/** A server tool's input: the streamed JSON, else the start block's; text that is not JSON is kept as received. */
function parseServerInput(json: string, startInput: unknown): unknown {
  if (json.trim() === '') return startInput ?? {};
  try {
    return JSON.parse(json);
  } catch {
    return { _raw: json };
  }
}

/**
 * A text delta that says nothing but its block's index and its text: the shape `DeltaTemplate` may learn (an
 * event with the same fields and another text maps to that text alone, for the same block).
 */
function isPlainTextDelta(
  event: AnthropicStreamEvent,
  delta: AnthropicContentDelta,
): delta is Extract<AnthropicContentDelta, { type: 'text_delta' }> {
  if (delta?.type !== 'text_delta' || typeof delta.text !== 'string' || delta.text === '') return false;
  return event.type === 'content_block_delta' && Object.keys(event).length === 3 && Object.keys(delta).length === 2;
}
