import { GroundingCollector } from './gemini-encode-grounding.js';
import {
  responseChoices,
  type CanonicalResponse,
  type ChoiceContent,
  type ResponseBlock,
} from '../../canonical/accumulate.js';
import type { FinishReason, TokenLogprob } from '../../canonical/events.js';
import { tagSignature } from '../../canonical/reasoning-signature.js';
import type { ReasoningBlock, VendorName } from '../../canonical/request.js';
import { totalInputTokens, type CanonicalUsage } from '../../canonical/usage.js';
import type {
  GeminiCandidate,
  GeminiGenerateContentResponse,
  GeminiLogprobsResult,
  GeminiPart,
  GeminiUsageMetadata,
} from '../../wire/gemini-generate-wire.js';
import { costFields } from '../shared/cost-fields.js';
import { packReasoning } from './gemini-reasoning-carrier.js';

export interface GeminiResponseContext {
  /** `responseId`, repeated on every chunk of a stream. */
  responseId: string;
  /** The public model id (`modelVersion`). */
  model: string;
  /** Which vendor produced the reply: reasoning signatures are tagged with it. */
  vendor: VendorName;
  /** The client asked for thought text (`thinkingConfig.includeThoughts`). */
  includeThoughts: boolean;
}

/**
 * Canonical finish reasons → Google's. Google has no "tool call" reason: a reply that called functions ends
 * with STOP (so Gemini CLI runs the calls), and so does a stop sequence. An upstream's own Google reason is kept when
 * it is more precise (RECITATION, BLOCKLIST…), except the malformed-call reasons of the upstream model, which
 * Gemini CLI would retry as if the gateway had failed.
 */
const FINISH_REASONS: Readonly<Record<FinishReason, string>> = {
  stop: 'STOP',
  'stop-sequence': 'STOP',
  length: 'MAX_TOKENS',
  'tool-calls': 'STOP',
  'content-filter': 'SAFETY',
  pause: 'STOP',
  other: 'OTHER',
};

/** Google's own reasons for a blocked reply or prompt: an upstream that speaks Google's API gives them as they are. */
const GOOGLE_FILTER_REASONS: ReadonlySet<string> = new Set([
  'SAFETY',
  'PROHIBITED_CONTENT',
  'BLOCKLIST',
  'SPII',
  'IMAGE_SAFETY',
  'IMAGE_PROHIBITED_CONTENT',
  'RECITATION',
  'IMAGE_RECITATION',
  'LANGUAGE',
  'OTHER',
]);

export function encodeGeminiFinishReason(reason: FinishReason | null, rawReason: string | null): string {
  if (reason === null) return 'STOP';
  if (reason === 'content-filter' && rawReason !== null && GOOGLE_FILTER_REASONS.has(rawReason)) return rawReason;
  return FINISH_REASONS[reason];
}

/**
 * `usageMetadata`: Google counts cached tokens inside `promptTokenCount` and thoughts beside
 * `candidatesTokenCount` (canonical output includes them), so the total is prompt + candidates + thoughts.
 */
export function encodeGeminiUsage(usage: CanonicalUsage, costNano?: bigint): GeminiUsageMetadata {
  const prompt = totalInputTokens(usage);
  const thoughts = Math.min(usage.reasoningTokens, usage.outputTokens);
  const candidates = usage.outputTokens - thoughts;
  return {
    promptTokenCount: prompt,
    candidatesTokenCount: candidates,
    ...(thoughts > 0 ? { thoughtsTokenCount: thoughts } : {}),
    ...(usage.cacheReadTokens > 0 ? { cachedContentTokenCount: usage.cacheReadTokens } : {}),
    totalTokenCount: prompt + candidates + thoughts,
    ...(costNano === undefined ? {} : costFields(costNano)),
  };
}

/** A thought part as the client sees it: its text when asked for, its signature tagged with its origin. */
export function thoughtPart(
  block: Pick<ReasoningBlock, 'text' | 'signature'>,
  context: GeminiResponseContext,
): GeminiPart {
  return {
    text: context.includeThoughts ? block.text : '',
    thought: true,
    thoughtSignature: tagSignature(context.vendor, block.signature ?? ''),
  };
}

/** A call as the client sees it: the gateway's id (it carries what the vendor needs back), arguments as an object. */
export function functionCallPart(id: string, name: string, argumentsJson: string): GeminiPart {
  return { functionCall: { id, name, args: argumentsObject(argumentsJson) } };
}

/** Function arguments as the object Google clients expect; text that is not a JSON object is kept under `_raw`. */
function argumentsObject(argumentsJson: string): Record<string, unknown> {
  if (argumentsJson.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(argumentsJson);
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : { _raw: argumentsJson };
  } catch {
    return { _raw: argumentsJson };
  }
}

/** Canonical token log probabilities as Google's `logprobsResult`: the chosen token and the top ones at each step. */
export function encodeGeminiLogprobs(tokens: readonly TokenLogprob[]): GeminiLogprobsResult {
  return {
    chosenCandidates: tokens.map((token) => ({ token: token.token, logProbability: token.logprob })),
    topCandidates: tokens.map((token) => ({
      candidates: token.top.map((top) => ({ token: top.token, logProbability: top.logprob })),
    })),
  };
}

/** A whole canonical reply as a `GenerateContentResponse`, one candidate per choice it holds. */
export function encodeGeminiResponse(
  response: CanonicalResponse,
  context: GeminiResponseContext,
  costNano?: bigint,
): GeminiGenerateContentResponse {
  return {
    candidates: responseChoices(response).map((choice, index) => encodeCandidate(choice, index, context)),
    usageMetadata: encodeGeminiUsage(response.usage, costNano),
    modelVersion: context.model,
    responseId: context.responseId,
  };
}

function encodeCandidate(choice: ChoiceContent, index: number, context: GeminiResponseContext): GeminiCandidate {
  const parts = encodeParts(choice.content, context);
  const candidate: GeminiCandidate = {
    content: { role: 'model', parts: parts.length > 0 ? parts : [{ text: '' }] },
    finishReason: encodeGeminiFinishReason(choice.finishReason, choice.rawFinishReason),
    index,
  };
  const tokens = choice.logprobs;
  if (tokens !== undefined && tokens.length > 0) {
    candidate.logprobsResult = encodeGeminiLogprobs(tokens);
    candidate.avgLogprobs = tokens.reduce((sum, token) => sum + token.logprob, 0) / tokens.length;
  }
  const grounding = new GroundingCollector();
  for (const block of choice.content) {
    if (block.type === 'server-tool-call') grounding.addCall(block.input);
    else if (block.type === 'text') for (const citation of block.citations ?? []) grounding.addCitation(citation);
  }
  const groundingMetadata = grounding.metadata();
  if (groundingMetadata !== undefined) candidate.groundingMetadata = groundingMetadata;
  return candidate;
}

function encodeParts(blocks: readonly ResponseBlock[], context: GeminiResponseContext): GeminiPart[] {
  const parts: GeminiPart[] = [];
  const reasoning = blocks.filter((block): block is ReasoningBlock => block.type === 'reasoning');
  let carrier = packReasoning(reasoning, context.vendor);
  for (const block of blocks) {
    if (block.type === 'text') {
      if (block.text !== '') parts.push({ text: block.text });
    } else if (block.type === 'reasoning') {
      if (context.includeThoughts) parts.push(thoughtPart(block, context));
    } else if (block.type === 'tool-call') {
      const part = functionCallPart(block.id, block.name, block.argumentsJson);
      // The reply's reasoning rides on its first call (gemini-reasoning-carrier.ts).
      if (carrier !== undefined) part.thoughtSignature = carrier;
      carrier = undefined;
      parts.push(part);
    }
  }
  return parts;
}
