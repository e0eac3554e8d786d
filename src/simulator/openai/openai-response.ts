/**
 * Chat Completions reply bodies: the `chat.completion` object and the `chat.completion.chunk` stream
 * (docs/protocols/wire-openai-chat.md#response, #stream), built from turn plans. DeepSeek speaks the same dialect with
 * a few differences (docs/protocols/wire-deepseek.md#response, #stream), chosen by a `ChatDialect`. Chunks are
 * assembled from a precomputed prefix so a long stream costs one JSON.stringify per piece, not per chunk object.
 */
import { SSE_DONE, sseData } from '../../streaming/sse-writer.js';
import { limitText } from '../reply-engine.js';
import type { StreamScript } from '../response-player.js';
import type { PlannedCall, TurnPlan } from '../turn-planner.js';
import { simulatedLogprobs, type SimulatedLogprob } from '../logprobs.js';

export interface ChatDialect {
  /** OpenAI adds `refusal: null` and `annotations: []` to messages, and `service_tier` to bodies. */
  openAiExtras: boolean;
  /** DeepSeek thinking mode shows the reasoning as `reasoning_content` (OpenAI keeps it hidden). */
  showReasoning: boolean;
  /** DeepSeek puts usage on the finish chunk; OpenAI sends a separate `choices: []` chunk. */
  usageOnFinishChunk: boolean;
  /** Sent before the first chunk (DeepSeek's `: keep-alive`). */
  preamble?: string;
  /** The in-stream error event for a status (the `error` fault with `after`). */
  errorFrame(status: number): string;
  toolCallId(call: PlannedCall): string;
}

export interface ChatReplySet {
  id: string;
  /** Unix seconds. */
  created: number;
  model: string;
  /** One plan per choice (`n`). */
  choices: TurnPlan[];
  /** The vendor's usage object. */
  usage: object;
  /** The first choice's `url_citation` annotations (a search model's reply). */
  annotations?: object[];
  /** `top_logprobs` when the request set `logprobs: true` (each text piece is then one token with its log probability). */
  topLogprobs?: number;
}

const SYSTEM_FINGERPRINT = 'fp_simulator';

export function finishReason(plan: TurnPlan): 'stop' | 'length' | 'tool_calls' {
  if (plan.end === 'tool-calls') return 'tool_calls';
  return plan.end === 'length' ? 'length' : 'stop';
}

function visibleContent(plan: TurnPlan): string | null {
  return plan.calls.length > 0 && plan.text.text === '' ? null : plan.text.text;
}

function message(plan: TurnPlan, dialect: ChatDialect, annotations: object[] = []): object {
  const toolCalls = plan.calls.map((call) => ({
    id: dialect.toolCallId(call),
    type: 'function',
    function: { name: call.name, arguments: call.argumentsJson },
  }));
  return {
    role: 'assistant',
    content: visibleContent(plan),
    ...(dialect.showReasoning ? { reasoning_content: plan.reasoning?.text ?? null } : {}),
    ...(dialect.openAiExtras ? { refusal: null, annotations } : {}),
    ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
  };
}

export function completionBody(set: ChatReplySet, dialect: ChatDialect): string {
  return JSON.stringify({
    id: set.id,
    object: 'chat.completion',
    created: set.created,
    model: set.model,
    choices: set.choices.map((plan, index) => ({
      index,
      message: message(plan, dialect, index === 0 ? set.annotations : undefined),
      logprobs:
        set.topLogprobs === undefined
          ? null
          : { content: wireLogprobs(simulatedLogprobs(plan.text.pieces, set.topLogprobs)), refusal: null },
      finish_reason: finishReason(plan),
    })),
    usage: set.usage,
    ...(dialect.openAiExtras ? { service_tier: 'default' } : {}),
    system_fingerprint: SYSTEM_FINGERPRINT,
  });
}

/** Log probabilities as OpenAI's chat completions write them, with each token's UTF-8 bytes. */
function wireLogprobs(tokens: readonly SimulatedLogprob[]): object[] {
  const bytes = (token: string) => [...Buffer.from(token, 'utf8')];
  return tokens.map((entry) => ({
    token: entry.token,
    logprob: entry.logprob,
    bytes: bytes(entry.token),
    top_logprobs: entry.top.map((top) => ({ token: top.token, logprob: top.logprob, bytes: bytes(top.token) })),
  }));
}

/** A delta's JSON, and the `logprobs` JSON of its chunk (null but for text pieces when log probabilities were asked for). */
interface ChoiceDelta {
  delta: string;
  logprobs: string;
}

/** The deltas of one choice, in order: role, reasoning, text, tool calls (finish excluded). */
function choiceDeltas(
  plan: TurnPlan,
  dialect: ChatDialect,
  topLogprobs: number | undefined,
  annotations: object[] | undefined,
): ChoiceDelta[] {
  const deltas: ChoiceDelta[] = [];
  const reasoning = dialect.showReasoning ? plan.reasoning : undefined;
  const opensWithText = visibleContent(plan) !== null && reasoning === undefined;
  const roleContent = opensWithText ? '""' : 'null';
  const push = (delta: string, logprobs = 'null') => deltas.push({ delta, logprobs });
  if (dialect.openAiExtras) push(`{"role":"assistant","content":${roleContent},"refusal":null}`);
  else if (reasoning !== undefined) push('{"role":"assistant","content":null,"reasoning_content":""}');
  else push(`{"role":"assistant","content":${roleContent}}`);
  for (const piece of reasoning?.pieces ?? []) push(`{"content":null,"reasoning_content":${JSON.stringify(piece)}}`);
  const textSuffix = reasoning === undefined ? '}' : ',"reasoning_content":null}';
  const logprobs = topLogprobs === undefined ? undefined : simulatedLogprobs(plan.text.pieces, topLogprobs);
  plan.text.pieces.forEach((piece, index) => {
    const tokens =
      logprobs === undefined ? 'null' : JSON.stringify({ content: wireLogprobs([logprobs[index]!]), refusal: null });
    push(`{"content":${JSON.stringify(piece)}${textSuffix}`, tokens);
  });
  // A search model sends its annotations once the text is complete, indexing into the whole of it.
  if (annotations !== undefined && annotations.length > 0) push(`{"annotations":${JSON.stringify(annotations)}}`);
  plan.calls.forEach((call, index) => {
    const id = JSON.stringify(dialect.toolCallId(call));
    push(
      `{"tool_calls":[{"index":${index},"id":${id},"type":"function","function":{"name":${JSON.stringify(call.name)},"arguments":""}}]}`,
    );
    // Arguments arrive in token-sized fragments that clients concatenate per `index`
    // (docs/protocols/translation.md#tool-calls-numbered-per-response).
    for (const fragment of limitText(call.argumentsJson, {}).pieces) {
      push(`{"tool_calls":[{"index":${index},"function":{"arguments":${JSON.stringify(fragment)}}}]}`);
    }
  });
  return deltas;
}

/**
 * The stream of a reply set. OpenAI: `usage: null` on every chunk only when `includeUsage` is set, then a
 * `choices: []` usage chunk. DeepSeek: no usage field except on the finish chunk. Choices of `n > 1`
 * follow one another (clients key them by `index`).
 */
export function streamScript(set: ChatReplySet, dialect: ChatDialect, includeUsage: boolean): StreamScript {
  const prefix =
    `{"id":${JSON.stringify(set.id)},"object":"chat.completion.chunk","created":${set.created},` +
    `"model":${JSON.stringify(set.model)},"system_fingerprint":"${SYSTEM_FINGERPRINT}","choices":[`;
  const usageJson = JSON.stringify(set.usage);
  const suffix = includeUsage && !dialect.usageOnFinishChunk ? '],"usage":null}' : ']}';
  const choiceFrame = (
    index: number,
    delta: string,
    finish: string | null,
    chunkSuffix = suffix,
    logprobs = 'null',
  ): string =>
    sseData(
      `${prefix}{"index":${index},"delta":${delta},"logprobs":${logprobs},"finish_reason":${finish === null ? 'null' : `"${finish}"`}}${chunkSuffix}`,
    );

  const frames: string[] = [];
  const finishDelta = dialect.openAiExtras ? '{}' : '{"content":""}';
  set.choices.forEach((plan, index) => {
    const annotations = index === 0 ? set.annotations : undefined;
    for (const { delta, logprobs } of choiceDeltas(plan, dialect, set.topLogprobs, annotations))
      frames.push(choiceFrame(index, delta, null, suffix, logprobs));
    const last = index === set.choices.length - 1;
    const finishSuffix = last && includeUsage && dialect.usageOnFinishChunk ? `],"usage":${usageJson}}` : suffix;
    frames.push(choiceFrame(index, finishDelta, finishReason(plan), finishSuffix));
  });
  const tail = [frames.pop() ?? ''];
  if (includeUsage && !dialect.usageOnFinishChunk) tail.push(sseData(`${prefix}],"usage":${usageJson}}`));
  tail.push(SSE_DONE);
  return {
    ...(dialect.preamble === undefined ? {} : { preamble: dialect.preamble }),
    head: frames.slice(0, 1),
    content: frames.slice(1),
    tail,
    // Cut off inside the JSON: the SDK's JSON.parse fails on it.
    malformedFrame: sseData(`${prefix}{"index":0,"delta":{"content":"`),
    errorFrame: (status) => dialect.errorFrame(status),
  };
}

/**
 * About the number of content frames the stream would have had, to pace `playJson` like it. Counted
 * without building the frames (argument fragments estimated at two per call): this runs on every
 * non-stream request.
 */
export function frameCount(set: ChatReplySet, dialect: ChatDialect): number {
  let count = 0;
  for (const plan of set.choices) {
    count += plan.text.pieces.length + plan.calls.length * 2;
    if (dialect.showReasoning) count += plan.reasoning?.pieces.length ?? 0;
  }
  return count;
}
