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
import { simulatedLogprobs, type SimulatedLogprob } from '../logprobs.js';
import type { PromptCount } from './gemini-prompt.js';
import type { GeminiThinking } from './gemini-types.js';

export interface GeminiReply {
  responseId: string;
  modelVersion: string;
  /** One plan per candidate (`candidateCount`). */
  plans: TurnPlan[];
  /** `logprobs` when the request set `responseLogprobs` (each text piece is then one token). */
  topLogprobs?: number;
  thinking: GeminiThinking;
  prompt: PromptCount;
  /** Prompt tokens served from the (simulated) cache. */
  cachedTokens: number;
  /** Makes thought signatures differ per conversation, identically for stream and non-stream. */
  signatureSeed: string;
  /** The in-band error body for a status (the `error` fault with `after`). */
  errorBody(status: number): string;
  /** Google Search grounding of the first candidate, when the request offered the tool: on its last response only. */
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

/**
 * Full usage; Gemini (proto3 JSON) leaves out zero counts. Thoughts are beside candidates, not inside; both count
 * every candidate.
 */
function usageMetadata(reply: GeminiReply): object {
  const thoughts = reply.plans.reduce((sum, plan) => sum + plan.reasoningTokens, 0);
  const candidates = reply.plans.reduce((sum, plan) => sum + plan.outputTokens, 0) - thoughts;
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

function callParts(reply: GeminiReply, plan: TurnPlan): Part[] {
  return plan.calls.map((call, index) => {
    const part: Part = { functionCall: { name: call.name, args: call.input } };
    // With parallel calls only the first part of the step carries the signature.
    if (index === 0 && reply.thinking.active) part.thoughtSignature = callSignature(reply, part);
    return part;
  });
}

function textSignature(reply: GeminiReply): string {
  return signGeminiPart(`${reply.signatureSeed}\ntext`);
}

/** Google's `logprobsResult` for some tokens. */
function logprobsResult(tokens: readonly SimulatedLogprob[]): object {
  return {
    topCandidates: tokens.map((token) => ({
      candidates: token.top.map((top) => ({ token: top.token, logProbability: top.logprob })),
    })),
    chosenCandidates: tokens.map((token) => ({ token: token.token, logProbability: token.logprob })),
  };
}

function candidate(
  parts: readonly Part[],
  finish: string | undefined,
  index: number,
  tokens?: readonly SimulatedLogprob[],
  grounding?: object,
): object {
  const withLogprobs =
    tokens === undefined
      ? {}
      : {
          logprobsResult: logprobsResult(tokens),
          ...(finish === undefined || tokens.length === 0
            ? {}
            : { avgLogprobs: tokens.reduce((sum, token) => sum + token.logprob, 0) / tokens.length }),
        };
  return {
    content: { ...(parts.length > 0 ? { parts } : {}), role: 'model' },
    ...(finish === undefined ? {} : { finishReason: finish }),
    ...withLogprobs,
    ...(grounding === undefined ? {} : { groundingMetadata: grounding }),
    index,
  };
}

function wholeCandidate(reply: GeminiReply, plan: TurnPlan, index: number): object {
  const { thinking } = reply;
  const parts: Part[] = [];
  if (thinking.includeThoughts && plan.reasoning !== undefined && plan.reasoning.text !== '')
    parts.push({ text: plan.reasoning.text, thought: true });
  if (plan.text.text !== '') parts.push({ text: plan.text.text });
  parts.push(...callParts(reply, plan));
  const last = parts.at(-1);
  // Without calls, a thinking model signs the last part of its reply.
  if (thinking.active && plan.calls.length === 0 && last !== undefined) last.thoughtSignature = textSignature(reply);
  const tokens = reply.topLogprobs === undefined ? undefined : simulatedLogprobs(plan.text.pieces, reply.topLogprobs);
  return candidate(parts, finishReason(plan), index, tokens, index === 0 ? reply.grounding : undefined);
}

export function generateContentBody(reply: GeminiReply): string {
  return JSON.stringify({
    candidates: reply.plans.map((plan, index) => wholeCandidate(reply, plan, index)),
    usageMetadata: usageMetadata(reply),
    modelVersion: reply.modelVersion,
    responseId: reply.responseId,
  });
}

/**
 * Each chunk is a whole response holding only its new part(s). Several candidates stream one after the other, each
 * chunk naming its candidate's `index`; the final chunk holds every candidate's last part and finish reason.
 */
function chunkJsons(reply: GeminiReply): { content: string[]; final: string } {
  const { thinking } = reply;
  const identity = `"modelVersion":${JSON.stringify(reply.modelVersion)},"responseId":${JSON.stringify(reply.responseId)}}`;
  const promptUsage = JSON.stringify({
    promptTokenCount: reply.prompt.total,
    totalTokenCount: reply.prompt.total,
    promptTokensDetails: modalityDetails(reply.prompt.byModality),
  });
  const open = '{"candidates":[{"content":{"parts":[';
  const chunk = (part: string, index: number, tokens?: SimulatedLogprob): string => {
    const logprobs = tokens === undefined ? '' : `,"logprobsResult":${JSON.stringify(logprobsResult([tokens]))}`;
    return `${open}${part}],"role":"model"}${logprobs},"index":${index}}],"usageMetadata":${promptUsage},${identity}`;
  };

  const content: string[] = [];
  const finals: string[] = [];
  reply.plans.forEach((plan, index) => {
    if (thinking.includeThoughts)
      for (const piece of plan.reasoning?.pieces ?? [])
        content.push(chunk(`{"text":${JSON.stringify(piece)},"thought":true}`, index));
    const textPieces = plan.text.pieces;
    const tokens = reply.topLogprobs === undefined ? undefined : simulatedLogprobs(textPieces, reply.topLogprobs);
    const lastTextInFinal = plan.calls.length === 0 && textPieces.length > 0;
    const streamedText = lastTextInFinal ? textPieces.slice(0, -1) : textPieces;
    for (const [at, piece] of streamedText.entries())
      content.push(chunk(`{"text":${JSON.stringify(piece)}}`, index, tokens?.[at]));
    for (const part of callParts(reply, plan)) content.push(chunk(JSON.stringify(part), index));

    const finalPart: Part = { text: lastTextInFinal ? (textPieces.at(-1) ?? '') : '' };
    if (thinking.active && plan.calls.length === 0) finalPart.thoughtSignature = textSignature(reply);
    const finalTokens = tokens === undefined ? undefined : lastTextInFinal ? tokens.slice(-1) : [];
    const grounding = index === 0 ? reply.grounding : undefined;
    finals.push(JSON.stringify(candidate([finalPart], finishReason(plan), index, finalTokens, grounding)));
  });
  const final = `{"candidates":[${finals.join(',')}],"usageMetadata":${JSON.stringify(usageMetadata(reply))},${identity}`;
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
export function frameCount(plans: readonly TurnPlan[], thinking: GeminiThinking): number {
  let count = 0;
  for (const plan of plans) {
    const thoughts = thinking.includeThoughts ? (plan.reasoning?.pieces.length ?? 0) : 0;
    count += thoughts + plan.text.pieces.length + plan.calls.length;
  }
  return count;
}
