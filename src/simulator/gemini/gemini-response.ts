/**
 * Gemini reply bodies: the `GenerateContentResponse` and its stream (docs/protocols/wire-gemini.md#response, #stream),
 * built from a turn plan. Streams are `data:` events separated by CRLF blank lines (or, without `alt=sse`, one JSON
 * array); intermediate chunks carry prompt-only usage, the last one the full `usageMetadata` and the
 * `finishReason`. Function calls come whole, one per chunk, and the turn still ends with `STOP`
 * (docs/protocols/translation.md#gemini-stop-after-tool-calls): after calls, the finish rides on a trailing chunk with
 * an empty text part.
 */
import type { StreamScript } from '../response-player.js';
import { signGeminiPart } from '../signatures.js';
import type { TurnPlan } from '../turn-planner.js';
import type { PromptCount } from './gemini-prompt.js';
import type { GeminiThinking } from './gemini-types.js';

export interface GeminiReply {
  responseId: string;
  modelVersion: string;
  plan: TurnPlan;
  thinking: GeminiThinking;
  prompt: PromptCount;
  /** Prompt tokens served from the (simulated) cache. */
  cachedTokens: number;
  /** Makes thought signatures differ per conversation, identically for stream and non-stream. */
  signatureSeed: string;
  /** The in-band error body for a status (the `error` fault with `after`). */
  errorBody(status: number): string;
  /** Google Search grounding of the reply, when the request offered the tool: on the last response only. */
  grounding?: object | undefined;
}

interface Part {
  text?: string;
  thought?: true;
  functionCall?: { name: string; args: Record<string, unknown> };
  thoughtSignature?: string;
}

const SSE_END = '\r\n\r\n';
const ARRAY_SEPARATOR = ',\r\n';

function finishReason(plan: TurnPlan): string {
  return plan.end === 'length' ? 'MAX_TOKENS' : 'STOP';
}

function modalityDetails(counts: PromptCount['byModality']): Array<{ modality: string; tokenCount: number }> {
  return Object.entries(counts).map(([modality, tokenCount]) => ({ modality, tokenCount }));
}

/** Full usage; Gemini (proto3 JSON) leaves out zero counts. Thoughts are beside candidates, not inside. */
function usageMetadata(reply: GeminiReply): object {
  const thoughts = reply.plan.reasoningTokens;
  const candidates = reply.plan.outputTokens - thoughts;
  return {
    promptTokenCount: reply.prompt.total,
    ...(candidates > 0 ? { candidatesTokenCount: candidates } : {}),
    totalTokenCount: reply.prompt.total + candidates + thoughts,
    ...(reply.cachedTokens > 0 ? { cachedContentTokenCount: reply.cachedTokens } : {}),
    promptTokensDetails: modalityDetails(reply.prompt.byModality),
    ...(reply.cachedTokens > 0 ? { cacheTokensDetails: [{ modality: 'TEXT', tokenCount: reply.cachedTokens }] } : {}),
    ...(thoughts > 0 ? { thoughtsTokenCount: thoughts } : {}),
  };
}

function callSignature(reply: GeminiReply, part: Part): string {
  return signGeminiPart(`${reply.signatureSeed}\ncall`, part.functionCall);
}

function callParts(reply: GeminiReply): Part[] {
  return reply.plan.calls.map((call, index) => {
    const part: Part = { functionCall: { name: call.name, args: call.input } };
    // With parallel calls only the first part of the step carries the signature.
    if (index === 0 && reply.thinking.active) part.thoughtSignature = callSignature(reply, part);
    return part;
  });
}

function textSignature(reply: GeminiReply): string {
  return signGeminiPart(`${reply.signatureSeed}\ntext`);
}

function candidate(parts: readonly Part[], finish: string | undefined, grounding?: object): object {
  return {
    content: { ...(parts.length > 0 ? { parts } : {}), role: 'model' },
    ...(finish === undefined ? {} : { finishReason: finish }),
    ...(grounding === undefined ? {} : { groundingMetadata: grounding }),
    index: 0,
  };
}

export function generateContentBody(reply: GeminiReply): string {
  const { plan, thinking } = reply;
  const parts: Part[] = [];
  if (thinking.includeThoughts && plan.reasoning !== undefined && plan.reasoning.text !== '')
    parts.push({ text: plan.reasoning.text, thought: true });
  if (plan.text.text !== '') parts.push({ text: plan.text.text });
  parts.push(...callParts(reply));
  const last = parts.at(-1);
  // Without calls, a thinking model signs the last part of its reply.
  if (thinking.active && plan.calls.length === 0 && last !== undefined) last.thoughtSignature = textSignature(reply);
  return JSON.stringify({
    candidates: [candidate(parts, finishReason(plan), reply.grounding)],
    usageMetadata: usageMetadata(reply),
    modelVersion: reply.modelVersion,
    responseId: reply.responseId,
  });
}

/** Each chunk is a whole response holding only its new part(s). */
function chunkJsons(reply: GeminiReply): { content: string[]; final: string } {
  const { plan, thinking } = reply;
  const identity = `"modelVersion":${JSON.stringify(reply.modelVersion)},"responseId":${JSON.stringify(reply.responseId)}}`;
  const promptUsage = JSON.stringify({
    promptTokenCount: reply.prompt.total,
    totalTokenCount: reply.prompt.total,
    promptTokensDetails: modalityDetails(reply.prompt.byModality),
  });
  const open = '{"candidates":[{"content":{"parts":[';
  const middle = `],"role":"model"},"index":0}],"usageMetadata":${promptUsage},${identity}`;
  const chunk = (part: string): string => `${open}${part}${middle}`;

  const content: string[] = [];
  if (thinking.includeThoughts)
    for (const piece of plan.reasoning?.pieces ?? [])
      content.push(chunk(`{"text":${JSON.stringify(piece)},"thought":true}`));
  const textPieces = plan.text.pieces;
  const lastTextInFinal = plan.calls.length === 0 && textPieces.length > 0;
  const streamedText = lastTextInFinal ? textPieces.slice(0, -1) : textPieces;
  for (const piece of streamedText) content.push(chunk(`{"text":${JSON.stringify(piece)}}`));
  for (const part of callParts(reply)) content.push(chunk(JSON.stringify(part)));

  const finalPart: Part = { text: lastTextInFinal ? (textPieces.at(-1) ?? '') : '' };
  if (thinking.active && plan.calls.length === 0) finalPart.thoughtSignature = textSignature(reply);
  const finalCandidate = JSON.stringify(candidate([finalPart], finishReason(plan), reply.grounding));
  const final = `{"candidates":[${finalCandidate}],"usageMetadata":${JSON.stringify(usageMetadata(reply))},${identity}`;
  return { content, final };
}

/** `alt=sse`: CRLF-separated `data:` events. Otherwise one JSON array streamed element by element. */
export function streamScript(reply: GeminiReply, sse: boolean): StreamScript {
  const { content, final } = chunkJsons(reply);
  const malformed = '{"candidates":[{"content":{"parts":[{"text":"';
  if (sse) {
    const event = (json: string): string => `data: ${json}${SSE_END}`;
    return {
      head: [],
      content: content.map(event),
      tail: [event(final)],
      malformedFrame: event(malformed),
      // Gemini reports a failure after the 200 as a chunk holding the usual error body.
      errorFrame: (status) => event(reply.errorBody(status)),
    };
  }
  return {
    contentType: 'application/json; charset=UTF-8',
    head: ['['],
    content: content.map((json) => json + ARRAY_SEPARATOR),
    tail: [`${final}]`],
    malformedFrame: malformed + ARRAY_SEPARATOR,
    errorFrame: (status) => `${reply.errorBody(status)}]`,
  };
}

/** Content chunks the stream would have had, to pace the non-stream reply like it. */
export function frameCount(plan: TurnPlan, thinking: GeminiThinking): number {
  const thoughts = thinking.includeThoughts ? (plan.reasoning?.pieces.length ?? 0) : 0;
  return thoughts + plan.text.pieces.length + plan.calls.length;
}
