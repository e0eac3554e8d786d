import { GatewayError } from '../../canonical/errors.js';
import type { CanonicalEvent } from '../../canonical/events.js';
import { promptSideUsage } from '../../canonical/usage.js';
import { mapGeminiFinishReason } from './gemini-map-finish.js';
import { mapGeminiUsage } from './gemini-map-usage.js';
import { encodeGeminiToolCallId, mintNonce } from './gemini-tool-call-id.js';
import { groundingCitations, groundingSearchEvents, groundingUsage } from './gemini-grounding.js';
import type {
  GeminiGenerateContentResponse,
  GeminiGroundingMetadata,
  GeminiPart,
  GeminiUsageMetadata,
} from '../../wire/gemini-generate-wire.js';

export interface GeminiResponseMapperOptions {
  /** Shown in error messages. */
  vendorLabel: string;
  /** The model named in `response-start` when the response carries no `modelVersion`. */
  fallbackModel: string;
  /** Nonces of minted ids (tool calls, a response without `responseId`); tests pass a deterministic one. */
  mintNonce?: () => string;
  /** Unix seconds for `response-start.created`. */
  now?: () => number;
  /** Grounding is billed once per grounded prompt (Gemini 2 models), not per search query. */
  searchesBilledPerPrompt?: boolean;
}

/**
 * `GenerateContentResponse` objects → canonical events. A streamed reply is a series of such objects, each
 * with only the new parts; a non-stream reply is a single one. Both go through this one state machine, so the
 * two modes cannot drift apart.
 *
 * - Thought parts become reasoning blocks, other text parts text blocks; a block continues across chunks until
 *   another kind of part arrives. A thought part's signature is sent raw as `reasoning-signature` (the client
 *   protocol tags it with its origin); a second signed thought starts a new block so signatures never merge.
 *   A signature on a non-thought text part is dropped: Gemini requires it back only on function calls.
 * - Each `functionCall` is one complete tool-call block, numbered by a per-response counter
 *   (docs/protocols/translation.md#tool-calls-numbered-per-response: parallel calls arrive in separate chunks, each at
 *   part position 0). Its id carries Gemini's id and signature (`gemini-tool-call-id.ts`).
 * - `finish` and the latest `usageMetadata` are emitted once, by `end()`, because a call may be seen in a chunk
 *   before the one with the finish reason (docs/protocols/translation.md#gemini-stop-after-tool-calls) and usage counts
 *   become final only on the last chunk.
 * - A prompt blocked before any candidate (`promptFeedback.blockReason`) finishes as content-filter, empty.
 */
export class GeminiResponseMapper {
  private readonly mint: () => string;
  private readonly now: () => number;
  private started = false;
  private textBlock: string | undefined;
  private reasoningBlock: { id: string; signed: boolean } | undefined;
  private textCount = 0;
  private reasoningCount = 0;
  private toolCount = 0;
  private sawFunctionCall = false;
  private finishReason: string | undefined;
  private blockReason: string | undefined;
  private usage: GeminiUsageMetadata | undefined;
  private grounding: GeminiGroundingMetadata | undefined;

  constructor(private readonly options: GeminiResponseMapperOptions) {
    this.mint = options.mintNonce ?? mintNonce;
    this.now = options.now ?? (() => Math.floor(Date.now() / 1000));
  }

  /** Events for one response object (a whole reply, or one chunk of a stream). */
  chunk(response: GeminiGenerateContentResponse): CanonicalEvent[] {
    const out: CanonicalEvent[] = [];
    if (!this.started) {
      this.started = true;
      const start: Extract<CanonicalEvent, { type: 'response-start' }> = {
        type: 'response-start',
        id: response.responseId ?? `gemini-${this.mint()}`,
        model: response.modelVersion ?? this.options.fallbackModel,
        created: this.now(),
      };
      // Every chunk repeats the prompt's count: the first one already tells it.
      if (response.usageMetadata?.promptTokenCount !== undefined) {
        start.inputUsage = promptSideUsage(mapGeminiUsage(response.usageMetadata));
      }
      out.push(start);
    }
    if (response.usageMetadata !== undefined) this.usage = response.usageMetadata;
    const candidate = response.candidates?.[0];
    if (candidate === undefined) {
      if (response.promptFeedback?.blockReason !== undefined) this.blockReason = response.promptFeedback.blockReason;
      return out;
    }
    for (const part of candidate.content?.parts ?? []) this.mapPart(part, out);
    if (candidate.finishReason !== undefined) this.finishReason = candidate.finishReason;
    if (candidate.groundingMetadata !== undefined) this.grounding = candidate.groundingMetadata;
    return out;
  }

  /** The closing events, at the end of the reply: a reply that never said why it ended was cut off. */
  end(): CanonicalEvent[] {
    if (this.finishReason === undefined && this.blockReason === undefined) {
      throw new GatewayError(
        'upstream_bad_response',
        `${this.options.vendorLabel} ended the reply before it was complete (no finish reason).`,
      );
    }
    const out: CanonicalEvent[] = [];
    this.closeReasoning(out);
    this.cite(out);
    this.closeText(out);
    if (this.grounding !== undefined) out.push(...groundingSearchEvents(this.grounding, `srvtoolu_${this.mint()}`));
    if (this.usage !== undefined) {
      const usage = mapGeminiUsage(this.usage);
      if (this.grounding !== undefined)
        usage.serverToolUse = groundingUsage(this.grounding, this.options.searchesBilledPerPrompt === true);
      out.push({ type: 'usage', usage });
    }
    if (this.finishReason !== undefined) {
      out.push({
        type: 'finish',
        reason: mapGeminiFinishReason(this.finishReason, this.sawFunctionCall),
        rawReason: this.finishReason,
      });
    } else {
      out.push({ type: 'finish', reason: 'content-filter', rawReason: this.blockReason ?? null });
    }
    return out;
  }

  private mapPart(part: GeminiPart, out: CanonicalEvent[]): void {
    if (part.functionCall !== undefined) {
      this.closeReasoning(out);
      this.closeText(out);
      this.sawFunctionCall = true;
      this.toolCount += 1;
      const blockId = `tool-${this.toolCount}`;
      const id = encodeGeminiToolCallId(
        { geminiId: part.functionCall.id, thoughtSignature: part.thoughtSignature },
        this.mint(),
      );
      out.push(
        { type: 'tool-call-start', blockId, id, name: part.functionCall.name },
        { type: 'tool-call-delta', blockId, argumentsDelta: JSON.stringify(part.functionCall.args ?? {}) },
        { type: 'tool-call-end', blockId },
      );
      return;
    }
    if (part.thought === true) {
      this.mapThought(part, out);
      return;
    }
    // Non-text parts of other kinds (code execution, generated images) are never requested; skip them.
    if (part.text === undefined || part.text === '') return;
    this.closeReasoning(out);
    if (this.textBlock === undefined) {
      this.textCount += 1;
      this.textBlock = `text-${this.textCount}`;
      out.push({ type: 'text-start', blockId: this.textBlock });
    }
    out.push({ type: 'text-delta', blockId: this.textBlock, text: part.text });
  }

  private mapThought(part: GeminiPart, out: CanonicalEvent[]): void {
    const signature = part.thoughtSignature === '' ? undefined : part.thoughtSignature;
    if (this.reasoningBlock?.signed === true && signature !== undefined) this.closeReasoning(out);
    this.closeText(out);
    if (this.reasoningBlock === undefined) {
      this.reasoningCount += 1;
      this.reasoningBlock = { id: `reasoning-${this.reasoningCount}`, signed: false };
      out.push({ type: 'reasoning-start', blockId: this.reasoningBlock.id });
    }
    const blockId = this.reasoningBlock.id;
    if (part.text !== undefined && part.text !== '') out.push({ type: 'reasoning-delta', blockId, text: part.text });
    if (signature !== undefined) {
      this.reasoningBlock.signed = true;
      out.push({ type: 'reasoning-signature', blockId, signature });
    }
  }

  private closeReasoning(out: CanonicalEvent[]): void {
    if (this.reasoningBlock === undefined) return;
    out.push({ type: 'reasoning-end', blockId: this.reasoningBlock.id });
    this.reasoningBlock = undefined;
  }

  /** Grounding arrives with the last chunk: its citations go on the text block still open (or a new, empty one). */
  private cite(out: CanonicalEvent[]): void {
    if (this.grounding === undefined) return;
    const citations = groundingCitations(this.grounding);
    if (citations.length === 0) return;
    if (this.textBlock === undefined) {
      this.textCount += 1;
      this.textBlock = `text-${this.textCount}`;
      out.push({ type: 'text-start', blockId: this.textBlock });
    }
    for (const citation of citations) out.push({ type: 'text-citation', blockId: this.textBlock, citation });
  }

  private closeText(out: CanonicalEvent[]): void {
    if (this.textBlock === undefined) return;
    out.push({ type: 'text-end', blockId: this.textBlock });
    this.textBlock = undefined;
  }
}
