import type { GatewayError } from '../../canonical/errors.js';
import type { CanonicalEvent, FinishReason } from '../../canonical/events.js';
import { tagSignature } from '../../canonical/reasoning-signature.js';
import type { CanonicalUsage } from '../../canonical/usage.js';
import { SSE_DONE, sseEvent } from '../../streaming/sse-writer.js';
import { renderAnthropicError } from './anthropic-encode-error.js';
import { emptyUsage } from '../../canonical/usage.js';
import {
  encodeAnthropicDeltaUsage,
  encodeAnthropicStopReason,
  encodeAnthropicUsage,
  encodeToolUse,
  MESSAGE_NULL_FIELDS,
  type AnthropicResponseContext,
} from './anthropic-encode-response.js';
import { anthropicCitation } from '../../wire/anthropic-server-blocks.js';
import { encodeServerToolResult, encodeServerToolUse } from './anthropic-encode-server-blocks.js';

type Frame = (index: number) => string;

interface BlockState {
  kind: 'text' | 'reasoning' | 'tool';
  /** Assigned when the block becomes the one being written: Anthropic indices are dense and in order. */
  index: number;
  opened: boolean;
  ended: boolean;
  signatureSent: boolean;
  /** Frames held while another block is being written. */
  pending: Frame[];
}

function frame(type: string, body: Record<string, unknown>): string {
  return sseEvent(type, JSON.stringify({ type, ...body }));
}

/** What `frame('content_block_delta', { index, delta })` gives, written out: no object built and stringified per chunk. */
function deltaFrame(index: number, delta: string): string {
  return sseEvent('content_block_delta', `{"type":"content_block_delta","index":${index},"delta":${delta}}`);
}

/**
 * Canonical events → the Anthropic SSE event sequence (docs/protocols/wire-anthropic.md#stream,
 * docs/protocols/translation.md#canonical-events-to-an-anthropic-stream).
 *
 * Anthropic clients require blocks one after another: start, deltas, stop, then the next. Some vendors
 * interleave (OpenAI streams parallel tool calls' arguments side by side), so a block that starts while
 * another is open is held back, whole, until the open one stops, and is then written at the next index.
 * Text and thinking blocks start lazily at their first delta, so an empty block never reaches the client.
 * `message_delta` waits for the end: vendors send usage after the finish
 * (docs/protocols/translation.md#usage-after-the-finish-chunk).
 */
export class AnthropicStreamEncoder {
  private readonly blocks = new Map<string, BlockState>();
  private active: BlockState | null = null;
  private readonly queue: BlockState[] = [];
  private nextIndex = 0;
  private started = false;
  private finishReason: FinishReason | null = null;
  private stopSequence: string | null = null;
  private sawToolUse = false;

  constructor(private readonly context: AnthropicResponseContext) {}

  encode(event: CanonicalEvent): string {
    let out = this.start(event.type === 'response-start' ? event.inputUsage : undefined);
    switch (event.type) {
      case 'text-start':
        this.blocks.set(event.blockId, this.newBlock('text'));
        break;
      case 'reasoning-start': {
        const block = this.newBlock('reasoning');
        this.blocks.set(event.blockId, block);
        if (event.redactedData !== undefined) {
          const data = event.redactedData;
          out += this.write(block, (index) =>
            frame('content_block_start', { index, content_block: { type: 'redacted_thinking', data } }),
          );
          block.opened = true;
          block.signatureSent = true;
        }
        break;
      }
      case 'tool-call-start': {
        const block = this.newBlock('tool');
        this.blocks.set(event.blockId, block);
        this.sawToolUse = true;
        const toolUse = encodeToolUse(event.id, event.name, {});
        out += this.write(block, (index) => frame('content_block_start', { index, content_block: toolUse }));
        block.opened = true;
        break;
      }
      case 'text-delta':
        out += this.delta(event.blockId, `{"type":"text_delta","text":${JSON.stringify(event.text)}}`);
        break;
      case 'text-citation':
        out += this.delta(
          event.blockId,
          `{"type":"citations_delta","citation":${JSON.stringify(anthropicCitation(event.citation))}}`,
        );
        break;
      case 'server-tool-call': {
        // As Anthropic streams it: the block opens with an empty input, which then arrives as JSON text.
        const start = encodeServerToolUse(event.id, event.name, {});
        const input = JSON.stringify(JSON.stringify(event.input ?? {}));
        out += this.wholeBlock(event.blockId, [
          (index) => frame('content_block_start', { index, content_block: start }),
          (index) => deltaFrame(index, `{"type":"input_json_delta","partial_json":${input}}`),
        ]);
        break;
      }
      case 'server-tool-result': {
        const result = encodeServerToolResult(event.result);
        out += this.wholeBlock(event.blockId, [
          (index) => frame('content_block_start', { index, content_block: result }),
        ]);
        break;
      }
      case 'reasoning-delta':
        out += this.delta(event.blockId, `{"type":"thinking_delta","thinking":${JSON.stringify(event.text)}}`);
        break;
      case 'reasoning-signature': {
        const block = this.blocks.get(event.blockId);
        if (block === undefined) break;
        const signature = block.signatureSent ? event.signature : tagSignature(this.context.vendor, event.signature);
        block.signatureSent = true;
        out += this.delta(event.blockId, `{"type":"signature_delta","signature":${JSON.stringify(signature)}}`);
        break;
      }
      case 'tool-call-delta':
        // An empty piece carries nothing (Anthropic's own first piece may be ""): skip it.
        if (event.argumentsDelta !== '')
          out += this.delta(
            event.blockId,
            `{"type":"input_json_delta","partial_json":${JSON.stringify(event.argumentsDelta)}}`,
          );
        break;
      case 'text-end':
      case 'reasoning-end':
      case 'tool-call-end':
        out += this.end(event.blockId);
        break;
      case 'finish':
        this.finishReason = event.reason;
        this.stopSequence = event.stopSequence ?? null;
        break;
      case 'error':
        out += this.error(event.error);
        break;
      case 'response-start':
      case 'usage':
        break;
    }
    return out;
  }

  /** Closing frames: every block stopped, `message_delta` with the final usage, `message_stop`, `[DONE]`. */
  finish(usage: CanonicalUsage, costNano?: bigint): string {
    let out = this.start();
    for (const blockId of [...this.blocks.keys()]) out += this.end(blockId);
    out += frame('message_delta', {
      delta: {
        stop_reason: encodeAnthropicStopReason(this.finishReason, this.sawToolUse),
        stop_sequence: this.stopSequence,
        stop_details: null,
        container: null,
      },
      usage: encodeAnthropicDeltaUsage(usage, costNano),
    });
    return out + frame('message_stop', {}) + SSE_DONE;
  }

  /** A failure after the headers went out: Anthropic's in-stream `error` event. */
  error(error: GatewayError): string {
    const body = renderAnthropicError(error);
    return this.start() + sseEvent('error', JSON.stringify(body)) + SSE_DONE;
  }

  /**
   * `message_start`, once. Its usage carries the prompt's counts when the vendor told them at the start (Anthropic,
   * Gemini). OpenAI-format vendors tell them only at the end: there it carries the gateway's count (`promptTokens`,
   * what `count_tokens` answers, by the vendor's recipe), which LangChain reads and nothing later replaces, and the
   * closing `message_delta` carries the vendor's counts, which the SDK's MessageStream, the AI SDK and Claude Code
   * take over message_start's. Without either, 0.
   */
  private start(inputUsage?: CanonicalUsage): string {
    if (this.started) return '';
    this.started = true;
    const promptTokens = this.context.promptTokens;
    const usage =
      inputUsage ?? (promptTokens === undefined ? emptyUsage() : { ...emptyUsage(), inputTokens: promptTokens });
    const message = {
      id: this.context.id,
      type: 'message',
      role: 'assistant',
      model: this.context.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      ...MESSAGE_NULL_FIELDS,
      usage: encodeAnthropicUsage({ ...usage, outputTokens: 0, reasoningTokens: 0 }),
    };
    return frame('message_start', { message }) + frame('ping', {});
  }

  /** A block that arrives complete (a server tool's call or result): its frames, then its stop. */
  private wholeBlock(blockId: string, frames: Frame[]): string {
    const block = this.newBlock('tool');
    this.blocks.set(blockId, block);
    let out = '';
    for (const render of frames) out += this.write(block, render);
    block.opened = true;
    return out + this.end(blockId);
  }

  private newBlock(kind: BlockState['kind']): BlockState {
    return { kind, index: -1, opened: false, ended: false, signatureSent: false, pending: [] };
  }

  /** A `content_block_delta` frame; `delta` is its already serialised JSON (this runs for every chunk). */
  private delta(blockId: string, delta: string): string {
    const block = this.blocks.get(blockId);
    if (block === undefined || block.ended) return '';
    // The usual case, the block being written: its frame at once, without a render closure.
    if (block.opened && this.active === block) return deltaFrame(block.index, delta);
    let out = '';
    if (!block.opened) {
      block.opened = true;
      const contentBlock =
        block.kind === 'text'
          ? { type: 'text', text: '', citations: null }
          : { type: 'thinking', thinking: '', signature: '' };
      out += this.write(block, (index) => frame('content_block_start', { index, content_block: contentBlock }));
    }
    return out + this.write(block, (index) => deltaFrame(index, delta));
  }

  private end(blockId: string): string {
    const block = this.blocks.get(blockId);
    if (block === undefined) return '';
    this.blocks.delete(blockId);
    block.ended = true;
    if (!block.opened) {
      // Never written: an empty text or thinking block is left out entirely.
      const queued = this.queue.indexOf(block);
      if (queued >= 0) this.queue.splice(queued, 1);
      return '';
    }
    let out = '';
    if (block.kind === 'reasoning' && !block.signatureSent) {
      // Unsigned reasoning (e.g. DeepSeek's) still names its origin, so a replay goes only where it belongs.
      const signature = tagSignature(this.context.vendor, '');
      if (signature !== '')
        out += this.write(block, (index) =>
          deltaFrame(index, `{"type":"signature_delta","signature":${JSON.stringify(signature)}}`),
        );
    }
    out += this.write(block, (index) => frame('content_block_stop', { index }));
    if (this.active === block) out += this.promote();
    return out;
  }

  /** Writes a frame of `block` now if it is (or can become) the open block, else holds it. */
  private write(block: BlockState, render: Frame): string {
    if (this.active === null && !this.queue.includes(block)) this.activate(block);
    if (this.active === block) return render(block.index);
    if (!this.queue.includes(block)) this.queue.push(block);
    block.pending.push(render);
    return '';
  }

  private activate(block: BlockState): void {
    block.index = this.nextIndex++;
    this.active = block;
  }

  /** The open block stopped: the held blocks get their turn, in the order they started. */
  private promote(): string {
    this.active = null;
    let out = '';
    while (this.active === null && this.queue.length > 0) {
      const next = this.queue.shift()!;
      this.activate(next);
      for (const render of next.pending.splice(0)) out += render(next.index);
      if (next.ended) this.active = null;
    }
    return out;
  }
}
