import { GatewayError } from '../../canonical/errors.js';
import type { CanonicalEvent, TokenLogprob } from '../../canonical/events.js';
import { promptSideUsage } from '../../canonical/usage.js';
import { mapGeminiFinishReason } from './gemini-map-finish.js';
import { mapGeminiUsage } from './gemini-map-usage.js';
import { encodeGeminiToolCallId, mintNonce } from './gemini-tool-call-id.js';
import { groundingCitations, groundingSearchEvents, groundingUsage } from './gemini-grounding.js';
import type {
  GeminiCandidate,
  GeminiGroundingMetadata,
  GeminiGenerateContentResponse,
  GeminiLogprobsResult,
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
 * - Several candidates (`candidateCount`) are told apart by their `index`: each has its own blocks and finish, and
 *   its `logprobsResult` rides on the text delta of the same chunk.
 */
export class GeminiResponseMapper {
  private readonly mint: () => string;
  private readonly now: () => number;
  private started = false;
  /** Candidates by index: one unless the request asked for several (`candidateCount`). */
  private readonly candidates = new Map<number, CandidateMapper>();
  private blockReason: string | undefined;
  private usage: GeminiUsageMetadata | undefined;

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
    const candidates = response.candidates ?? [];
    if (candidates.length === 0) {
      if (response.promptFeedback?.blockReason !== undefined) this.blockReason = response.promptFeedback.blockReason;
      return out;
    }
    for (const [position, candidate] of candidates.entries())
      this.candidate(candidate.index ?? position).chunk(candidate, out);
    return out;
  }

  /** The closing events, at the end of the reply: a reply that never said why it ended was cut off. */
  end(): CanonicalEvent[] {
    const candidates = [...this.candidates.values()].sort((a, b) => a.index - b.index);
    const unfinished = candidates.length === 0 || candidates.some((candidate) => candidate.finishReason === undefined);
    if (unfinished && this.blockReason === undefined) {
      throw new GatewayError(
        'upstream_bad_response',
        `${this.options.vendorLabel} ended the reply before it was complete (no finish reason).`,
      );
    }
    const out: CanonicalEvent[] = [];
    for (const candidate of candidates) candidate.close(out);
    if (this.usage !== undefined) {
      const usage = mapGeminiUsage(this.usage);
      const grounding = this.candidates.get(0)?.grounding;
      if (grounding !== undefined)
        usage.serverToolUse = groundingUsage(grounding, this.options.searchesBilledPerPrompt === true);
      out.push({ type: 'usage', usage });
    }
    if (candidates.length === 0)
      out.push({ type: 'finish', reason: 'content-filter', rawReason: this.blockReason ?? null });
    for (const candidate of candidates) out.push(candidate.finish(this.blockReason));
    return out;
  }

  private candidate(index: number): CandidateMapper {
    let candidate = this.candidates.get(index);
    if (candidate === undefined) {
      candidate = new CandidateMapper(index, this.mint);
      this.candidates.set(index, candidate);
    }
    return candidate;
  }
}

/** One candidate's blocks: those of the first are named as with one candidate, the others' carry their index. */
class CandidateMapper {
  private textBlock: string | undefined;
  private reasoningBlock: { id: string; signed: boolean } | undefined;
  private textCount = 0;
  private reasoningCount = 0;
  private toolCount = 0;
  private sawFunctionCall = false;
  finishReason: string | undefined;
  /** Google Search grounding of the first candidate (it comes with the last chunk). */
  grounding: GeminiGroundingMetadata | undefined;
  private readonly prefix: string;
  private readonly tag: { choice?: number };

  constructor(
    readonly index: number,
    private readonly mint: () => string,
  ) {
    this.prefix = index === 0 ? '' : `c${index}-`;
    this.tag = index === 0 ? {} : { choice: index };
  }

  chunk(candidate: GeminiCandidate, out: CanonicalEvent[]): void {
    let lastText: Extract<CanonicalEvent, { type: 'text-delta' }> | undefined;
    for (const part of candidate.content?.parts ?? []) lastText = this.mapPart(part, out) ?? lastText;
    // The chunk's tokens ride on its text (Gemini gives them per candidate, not per part).
    const logprobs = mapGeminiLogprobs(candidate.logprobsResult);
    if (lastText !== undefined && logprobs !== undefined) lastText.logprobs = logprobs;
    if (candidate.finishReason !== undefined) this.finishReason = candidate.finishReason;
    if (candidate.groundingMetadata !== undefined && this.index === 0) this.grounding = candidate.groundingMetadata;
  }

  close(out: CanonicalEvent[]): void {
    this.closeReasoning(out);
    this.cite(out);
    this.closeText(out);
    if (this.grounding !== undefined) out.push(...groundingSearchEvents(this.grounding, `srvtoolu_${this.mint()}`));
  }

  /** Grounding arrives with the last chunk: its citations go on the text block still open (or a new, empty one). */
  private cite(out: CanonicalEvent[]): void {
    if (this.grounding === undefined) return;
    const citations = groundingCitations(this.grounding);
    if (citations.length === 0) return;
    if (this.textBlock === undefined) {
      this.textCount += 1;
      this.textBlock = `${this.prefix}text-${this.textCount}`;
      out.push({ type: 'text-start', blockId: this.textBlock, ...this.tag });
    }
    for (const citation of citations) out.push({ type: 'text-citation', blockId: this.textBlock, citation });
  }

  finish(blockReason: string | undefined): CanonicalEvent {
    if (this.finishReason === undefined)
      return { type: 'finish', reason: 'content-filter', rawReason: blockReason ?? null, ...this.tag };
    return {
      type: 'finish',
      reason: mapGeminiFinishReason(this.finishReason, this.sawFunctionCall),
      rawReason: this.finishReason,
      ...this.tag,
    };
  }

  /** Maps one part; returns the text delta it made, if any. */
  private mapPart(
    part: GeminiPart,
    out: CanonicalEvent[],
  ): Extract<CanonicalEvent, { type: 'text-delta' }> | undefined {
    if (part.functionCall !== undefined) {
      this.closeReasoning(out);
      this.closeText(out);
      this.sawFunctionCall = true;
      this.toolCount += 1;
      const blockId = `${this.prefix}tool-${this.toolCount}`;
      const id = encodeGeminiToolCallId(
        { geminiId: part.functionCall.id, thoughtSignature: part.thoughtSignature },
        this.mint(),
      );
      out.push(
        { type: 'tool-call-start', blockId, id, name: part.functionCall.name, ...this.tag },
        { type: 'tool-call-delta', blockId, argumentsDelta: JSON.stringify(part.functionCall.args ?? {}) },
        { type: 'tool-call-end', blockId },
      );
      return undefined;
    }
    if (part.thought === true) {
      this.mapThought(part, out);
      return undefined;
    }
    // Non-text parts of other kinds (code execution, generated images) are never requested; skip them.
    if (part.text === undefined || part.text === '') return undefined;
    this.closeReasoning(out);
    if (this.textBlock === undefined) {
      this.textCount += 1;
      this.textBlock = `${this.prefix}text-${this.textCount}`;
      out.push({ type: 'text-start', blockId: this.textBlock, ...this.tag });
    }
    const delta: Extract<CanonicalEvent, { type: 'text-delta' }> = {
      type: 'text-delta',
      blockId: this.textBlock,
      text: part.text,
    };
    out.push(delta);
    return delta;
  }

  private mapThought(part: GeminiPart, out: CanonicalEvent[]): void {
    const signature = part.thoughtSignature === '' ? undefined : part.thoughtSignature;
    if (this.reasoningBlock?.signed === true && signature !== undefined) this.closeReasoning(out);
    this.closeText(out);
    if (this.reasoningBlock === undefined) {
      this.reasoningCount += 1;
      this.reasoningBlock = { id: `${this.prefix}reasoning-${this.reasoningCount}`, signed: false };
      out.push({ type: 'reasoning-start', blockId: this.reasoningBlock.id, ...this.tag });
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

  private closeText(out: CanonicalEvent[]): void {
    if (this.textBlock === undefined) return;
    out.push({ type: 'text-end', blockId: this.textBlock });
    this.textBlock = undefined;
  }
}

/** `logprobsResult` → canonical tokens: each chosen token with the alternatives Gemini gave at its step. */
function mapGeminiLogprobs(result: GeminiLogprobsResult | undefined): TokenLogprob[] | undefined {
  const chosen = result?.chosenCandidates;
  if (chosen === undefined || chosen.length === 0) return undefined;
  return chosen.map((token, step) => ({
    token: token.token ?? '',
    logprob: token.logProbability ?? 0,
    top: (result?.topCandidates?.[step]?.candidates ?? []).map((top) => ({
      token: top.token ?? '',
      logprob: top.logProbability ?? 0,
    })),
  }));
}
