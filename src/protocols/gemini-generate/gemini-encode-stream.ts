import { GroundingCollector } from './gemini-encode-grounding.js';
import type { GatewayError } from '../../canonical/errors.js';
import type { CanonicalEvent, FinishReason, TokenLogprob } from '../../canonical/events.js';
import type { ReasoningBlock } from '../../canonical/request.js';
import type { CanonicalUsage } from '../../canonical/usage.js';
import { sseData } from '../../streaming/sse-writer.js';
import type { GeminiCandidate, GeminiGenerateContentResponse, GeminiPart } from '../../wire/gemini-generate-wire.js';
import type { StreamEncoder } from '../shared/reply-exchange.js';
import { encodeGeminiStreamError } from './gemini-encode-error.js';
import {
  encodeGeminiFinishReason,
  encodeGeminiLogprobs,
  encodeGeminiUsage,
  functionCallPart,
  thoughtPart,
  type GeminiResponseContext,
} from './gemini-encode-response.js';
import { packReasoning } from './gemini-reasoning-carrier.js';

/** `?alt=sse`: one `data:` event per chunk; otherwise the JSON array Google streams (`[{…},\r\n{…}]`). */
export type GeminiStreamFraming = 'sse' | 'json-array';

/**
 * Canonical events → `streamGenerateContent` chunks (docs/protocols/wire-gemini.md#stream-output-rules): each chunk a
 * whole `GenerateContentResponse` holding only the new parts, with `responseId` and `modelVersion` repeated.
 *
 * - The last chunk carries `finishReason` and `usageMetadata`, and it must hold parts: @google/genai's chat drops a
 *   turn from its history when any chunk has a candidate without parts, and Gemini CLI rejects a stream that
 *   ends without a finish reason. So each chunk is held until the next one is known (one chunk behind), and the
 *   held one gets the finish reason and usage at the end.
 * - A function call is one part, whole (`args` an object), sent when its arguments are complete.
 * - No `data: [DONE]` at the end: @google/genai parses every `data:` line as JSON and throws on `[DONE]`; Google
 *   ends the stream by closing it.
 * - Keep-alives while the vendor is silent are blank lines (see `keepAlive`).
 * - A failure after the headers went out is one more chunk `{"error": {code, message, status}}`, which the SDK
 *   raises as an ApiError, and the stream closes.
 */
export class GeminiStreamEncoder implements StreamEncoder {
  readonly contentType: string;
  /**
   * A blank line, not the SSE comment the other routes send: the @google/genai copy inside Gemini CLI finds events
   * with `/^\s*data: (.*)\n\n/` at the start of its buffer, so a comment there stalls every later chunk ("Incomplete
   * JSON segment at the end"); leading whitespace it skips. A blank line is also JSON whitespace for the array form.
   */
  readonly keepAlive: string;
  private held: HeldChunk | undefined;
  private chunks = 0;
  /** Each candidate's finish, by index (one candidate unless the request asked for several). */
  private readonly finishes = new Map<number, { reason: FinishReason; raw: string | null }>();
  /** The candidate of each block of a candidate after the first. */
  private readonly blockCandidates = new Map<string, number>();
  private readonly tools = new Map<string, { blockId: string; id: string; name: string; argumentsJson: string }>();
  /** The reply's searches and the sources its text cites: the first candidate's grounding, on the last chunk. */
  private readonly grounding = new GroundingCollector();
  private readonly thoughts = new Map<string, ReasoningBlock>();
  /** Every reasoning block of the reply, for the carrier on its first call. */
  private readonly reasoning: ReasoningBlock[] = [];
  private sentCall = false;
  /** An error went out: the stream is over, nothing more is written. */
  private closed = false;

  constructor(
    private readonly context: GeminiResponseContext,
    private readonly framing: GeminiStreamFraming,
  ) {
    this.contentType = framing === 'sse' ? 'text/event-stream; charset=utf-8' : 'application/json; charset=utf-8';
    this.keepAlive = '\n';
  }

  encode(event: CanonicalEvent): string {
    if (this.closed) return '';
    switch (event.type) {
      case 'text-start':
        this.follow(event.blockId, event.choice);
        return '';
      case 'text-delta':
        return event.text === '' ? '' : this.push({ text: event.text }, event.blockId, event.logprobs);
      case 'reasoning-start': {
        this.follow(event.blockId, event.choice);
        const block: ReasoningBlock = {
          type: 'reasoning',
          text: '',
          ...(event.redactedData === undefined ? {} : { redactedData: event.redactedData }),
        };
        this.thoughts.set(event.blockId, block);
        this.reasoning.push(block);
        return '';
      }
      case 'reasoning-delta': {
        const block = this.thoughts.get(event.blockId);
        if (block !== undefined) block.text += event.text;
        return this.context.includeThoughts && event.text !== ''
          ? this.push({ text: event.text, thought: true }, event.blockId)
          : '';
      }
      case 'reasoning-signature': {
        const block = this.thoughts.get(event.blockId);
        if (block !== undefined) block.signature = (block.signature ?? '') + event.signature;
        return '';
      }
      case 'reasoning-end': {
        const block = this.thoughts.get(event.blockId);
        this.thoughts.delete(event.blockId);
        // The signature closes the thought, on a part of its own (text already went out as it came).
        return block !== undefined && this.context.includeThoughts
          ? this.push({ ...thoughtPart({ text: '', signature: block.signature }, this.context) }, event.blockId)
          : '';
      }
      case 'tool-call-start':
        this.follow(event.blockId, event.choice);
        this.tools.set(event.blockId, { blockId: event.blockId, id: event.id, name: event.name, argumentsJson: '' });
        return '';
      case 'tool-call-delta': {
        const call = this.tools.get(event.blockId);
        if (call !== undefined) call.argumentsJson += event.argumentsDelta;
        return '';
      }
      case 'tool-call-end': {
        const call = this.tools.get(event.blockId);
        if (call === undefined) return '';
        this.tools.delete(event.blockId);
        this.blockCandidates.delete(event.blockId);
        return this.pushCall(call);
      }
      case 'finish':
        this.finishes.set(event.choice ?? 0, { reason: event.reason, raw: event.rawReason });
        return '';
      case 'error':
        return this.error(event.error);
      case 'response-start':
      case 'text-end':
      case 'usage':
      case 'server-tool-result':
        return '';
      // Gemini has no server-tool blocks: a search shows as the reply's grounding, on the last chunk.
      case 'server-tool-call':
        this.grounding.addCall(event.input);
        return '';
      case 'text-citation':
        this.grounding.addCitation(event.citation);
        return '';
    }
  }

  /** The held chunk, now the last: with the finish reason and the final usage (and the charge, once settled). */
  finish(usage: CanonicalUsage, costNano?: bigint): string {
    if (this.closed) return '';
    let out = '';
    for (const call of this.tools.values()) out += this.pushCall(call);
    this.tools.clear();
    const held = this.held ?? { candidate: 0, parts: [{ text: '' }] };
    this.held = undefined;
    // Every candidate's finish on the last chunk; those the held parts are not of get an empty text part.
    const indexes = new Set([held.candidate, 0, ...this.finishes.keys()]);
    const chunk: GeminiGenerateContentResponse = {
      candidates: [...indexes]
        .sort((a, b) => a - b)
        .map((index) => {
          const candidate = index === held.candidate ? heldCandidate(held) : emptyCandidate(index);
          const finish = this.finishes.get(index);
          candidate.finishReason = encodeGeminiFinishReason(finish?.reason ?? null, finish?.raw ?? null);
          const groundingMetadata = index === 0 ? this.grounding.metadata() : undefined;
          if (groundingMetadata !== undefined) candidate.groundingMetadata = groundingMetadata;
          return candidate;
        }),
      modelVersion: this.context.model,
      responseId: this.context.responseId,
    };
    chunk.usageMetadata = encodeGeminiUsage(usage, costNano);
    out += this.frame(chunk);
    return this.framing === 'json-array' ? `${out}]` : out;
  }

  error(error: GatewayError): string {
    if (this.closed) return '';
    this.closed = true;
    let out = '';
    if (this.held !== undefined) out += this.frame(this.chunk(this.held));
    this.held = undefined;
    out += this.frame(encodeGeminiStreamError(error));
    return this.framing === 'json-array' ? `${out}]` : out;
  }

  private follow(blockId: string, candidate: number | undefined): void {
    if (candidate !== undefined && candidate > 0) this.blockCandidates.set(blockId, candidate);
  }

  private pushCall(call: { blockId: string; id: string; name: string; argumentsJson: string }): string {
    const part = functionCallPart(call.id, call.name, call.argumentsJson);
    if (!this.sentCall) {
      this.sentCall = true;
      const carrier = packReasoning(this.reasoning, this.context.vendor);
      if (carrier !== undefined) part.thoughtSignature = carrier;
    }
    return this.push(part, call.blockId);
  }

  /** Holds `part` (of the block's candidate) in a new chunk and sends the one held before it. */
  private push(part: GeminiPart, blockId: string, logprobs?: readonly TokenLogprob[]): string {
    const previous = this.held;
    this.held = {
      candidate: this.blockCandidates.get(blockId) ?? 0,
      parts: [part],
      ...(logprobs === undefined ? {} : { logprobs }),
    };
    return previous === undefined ? '' : this.frame(this.chunk(previous));
  }

  private chunk(held: HeldChunk): GeminiGenerateContentResponse {
    return {
      candidates: [heldCandidate(held)],
      modelVersion: this.context.model,
      responseId: this.context.responseId,
    };
  }

  private frame(body: unknown): string {
    const json = JSON.stringify(body);
    if (this.framing === 'sse') return sseData(json);
    return `${this.chunks++ === 0 ? '[' : ',\r\n'}${json}`;
  }
}

/** A chunk not sent yet: parts of one candidate, and the log probabilities of its text. */
interface HeldChunk {
  candidate: number;
  parts: GeminiPart[];
  logprobs?: readonly TokenLogprob[];
}

function heldCandidate(held: HeldChunk): GeminiCandidate {
  const candidate: GeminiCandidate = { content: { role: 'model', parts: held.parts }, index: held.candidate };
  if (held.logprobs !== undefined) candidate.logprobsResult = encodeGeminiLogprobs(held.logprobs);
  return candidate;
}

function emptyCandidate(index: number): GeminiCandidate {
  return { content: { role: 'model', parts: [{ text: '' }] }, index };
}
