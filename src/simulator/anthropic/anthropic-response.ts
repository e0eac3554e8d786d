/**
 * Anthropic Messages reply bodies: the `message` object and its event stream
 * (docs/protocols/wire-anthropic.md#response, #stream), built from a turn plan. Blocks come in the order thinking →
 * text → tool_use; the thinking block carries a signature the simulator can verify when a client sends it back.
 */
import { sseEvent } from '../../streaming/sse-writer.js';
import type { CacheCounts } from '../prompt-cache/cache-counts.js';
import { hashHex, limitText } from '../reply-engine.js';
import type { StreamScript } from '../response-player.js';
import { signThinking } from '../signatures.js';
import type { PlannedCall, TurnPlan } from '../turn-planner.js';
import { anthropicStreamError } from './anthropic-errors.js';
import type { WebSearchTurn } from './anthropic-web-search.js';

export interface AnthropicReply {
  id: string;
  model: string;
  plan: TurnPlan;
  /** Whether the reasoning is shown as a thinking block (thinking enabled). */
  showThinking: boolean;
  prompt: CacheCounts;
  /** The web search this turn makes before it answers, when the request offers the tool. */
  webSearch?: WebSearchTurn | undefined;
}

type ResponseBlock =
  | { type: 'thinking'; thinking: string; signature: string; pieces: string[] }
  | { type: 'text'; text: string; pieces: string[]; citations?: Record<string, unknown>[] }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown>; json: string }
  | { type: 'server_tool_use'; id: string; input: Record<string, unknown>; json: string }
  | { type: 'web_search_tool_result'; toolUseId: string; content: WebSearchTurn['pages'] };

export function toolUseId(call: PlannedCall): string {
  return `toolu_01${hashHex(call.idSeed, 22)}`;
}

function responseBlocks(reply: AnthropicReply): ResponseBlock[] {
  const { plan } = reply;
  const out: ResponseBlock[] = [];
  if (reply.showThinking && plan.reasoning !== undefined) {
    out.push({
      type: 'thinking',
      thinking: plan.reasoning.text,
      signature: signThinking(plan.reasoning.text),
      pieces: plan.reasoning.pieces,
    });
  }
  const search = reply.webSearch;
  if (search !== undefined) {
    const input = { query: search.query };
    out.push(
      { type: 'server_tool_use', id: search.toolUseId, input, json: JSON.stringify(input) },
      { type: 'web_search_tool_result', toolUseId: search.toolUseId, content: search.pages },
    );
  }
  // Never an empty text block: a client echoing it back would be refused
  // (docs/protocols/translation.md#empty-text-blocks).
  if (plan.text.text.length > 0)
    out.push({
      type: 'text',
      text: plan.text.text,
      pieces: plan.text.pieces,
      ...(search === undefined ? {} : { citations: [search.citation] }),
    });
  for (const call of plan.calls)
    out.push({ type: 'tool_use', id: toolUseId(call), name: call.name, input: call.input, json: call.argumentsJson });
  return out;
}

function stopReason(plan: TurnPlan): string {
  switch (plan.end) {
    case 'tool-calls':
      return 'tool_use';
    case 'length':
      return 'max_tokens';
    case 'stop-sequence':
      return 'stop_sequence';
    default:
      return 'end_turn';
  }
}

function usage(reply: AnthropicReply, outputTokens: number): object {
  const { prompt } = reply;
  return {
    input_tokens: prompt.uncached,
    cache_creation_input_tokens: prompt.write,
    cache_read_input_tokens: prompt.read,
    cache_creation: {
      ephemeral_5m_input_tokens: prompt.write - prompt.write1h,
      ephemeral_1h_input_tokens: prompt.write1h,
    },
    output_tokens: outputTokens,
    ...serverToolUse(reply),
    service_tier: 'standard',
  };
}

/** `usage.server_tool_use`, on replies that searched (the simulator's other replies keep their older shape). */
function serverToolUse(reply: AnthropicReply): { server_tool_use?: object } {
  return reply.webSearch === undefined ? {} : { server_tool_use: { web_search_requests: 1, web_fetch_requests: 0 } };
}

export function messageBody(reply: AnthropicReply): string {
  return JSON.stringify({
    id: reply.id,
    type: 'message',
    role: 'assistant',
    model: reply.model,
    // biome-ignore lint/suspicious/useIterableCallbackReturn: the switch covers every block type, as TypeScript checks.
    content: responseBlocks(reply).map((block) => {
      switch (block.type) {
        case 'thinking':
          return { type: 'thinking', thinking: block.thinking, signature: block.signature };
        case 'text':
          return block.citations === undefined
            ? { type: 'text', text: block.text }
            : { type: 'text', text: block.text, citations: block.citations };
        case 'tool_use':
          return { type: 'tool_use', id: block.id, name: block.name, input: block.input };
        case 'server_tool_use':
          return serverToolUseBlock(block, block.input);
        case 'web_search_tool_result':
          return searchResultBlock(block);
      }
    }),
    stop_reason: stopReason(reply.plan),
    stop_sequence: reply.plan.stopSequence ?? null,
    usage: usage(reply, reply.plan.outputTokens),
  });
}

const PING = sseEvent('ping', '{"type":"ping"}');

function delta(index: number, payload: string): string {
  return sseEvent('content_block_delta', `{"type":"content_block_delta","index":${index},"delta":${payload}}`);
}

function serverToolUseBlock(block: { id: string }, input: object): object {
  return { type: 'server_tool_use', id: block.id, name: 'web_search', input, caller: { type: 'direct' } };
}

function searchResultBlock(block: Extract<ResponseBlock, { type: 'web_search_tool_result' }>): object {
  return {
    type: 'web_search_tool_result',
    tool_use_id: block.toolUseId,
    caller: { type: 'direct' },
    content: block.content,
  };
}

function blockShell(block: ResponseBlock): string {
  switch (block.type) {
    case 'thinking':
      return '{"type":"thinking","thinking":""}';
    case 'text':
      return block.citations === undefined ? '{"type":"text","text":""}' : '{"type":"text","text":"","citations":[]}';
    case 'tool_use':
      return `{"type":"tool_use","id":${JSON.stringify(block.id)},"name":${JSON.stringify(block.name)},"input":{}}`;
    case 'server_tool_use':
      return JSON.stringify(serverToolUseBlock(block, {}));
    case 'web_search_tool_result':
      // Arrives whole: a result block has no deltas.
      return JSON.stringify(searchResultBlock(block));
  }
}

function blockStart(index: number, block: ResponseBlock): string {
  const shell = blockShell(block);
  return sseEvent('content_block_start', `{"type":"content_block_start","index":${index},"content_block":${shell}}`);
}

function blockStop(index: number): string {
  return sseEvent('content_block_stop', `{"type":"content_block_stop","index":${index}}`);
}

function blockDeltas(index: number, block: ResponseBlock): string[] {
  switch (block.type) {
    case 'thinking':
      return [
        ...block.pieces.map((piece) => delta(index, `{"type":"thinking_delta","thinking":${JSON.stringify(piece)}}`)),
        delta(index, `{"type":"signature_delta","signature":${JSON.stringify(block.signature)}}`),
      ];
    case 'text':
      return [
        ...(block.citations ?? []).map((citation) =>
          delta(index, `{"type":"citations_delta","citation":${JSON.stringify(citation)}}`),
        ),
        ...block.pieces.map((piece) => delta(index, `{"type":"text_delta","text":${JSON.stringify(piece)}}`)),
      ];
    case 'web_search_tool_result':
      return [];
    case 'server_tool_use':
    case 'tool_use':
      // The first piece is empty, as Anthropic's often is; clients concatenate the rest.
      return ['', ...limitText(block.json, {}).pieces].map((piece) =>
        delta(index, `{"type":"input_json_delta","partial_json":${JSON.stringify(piece)}}`),
      );
  }
}

/**
 * The event stream. Block starts and stops ride with the neighbouring delta frame, so faults and chunk
 * delays count deltas only. Usage in `message_delta` is cumulative (the totals, input counts repeated).
 */
export function streamScript(reply: AnthropicReply): StreamScript {
  const start = {
    id: reply.id,
    type: 'message',
    role: 'assistant',
    model: reply.model,
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: usage(reply, 1),
  };
  const blocks = responseBlocks(reply);
  const content: string[] = [];
  let pending = '';
  blocks.forEach((block, index) => {
    if (index > 0) pending += blockStop(index - 1);
    pending += blockStart(index, block);
    if (index === 0) pending += PING;
    for (const frame of blockDeltas(index, block)) {
      content.push(pending + frame);
      pending = '';
    }
  });
  pending += blocks.length === 0 ? PING : blockStop(blocks.length - 1);
  const { prompt } = reply;
  const finalUsage = {
    input_tokens: prompt.uncached,
    cache_creation_input_tokens: prompt.write,
    cache_read_input_tokens: prompt.read,
    output_tokens: reply.plan.outputTokens,
    ...serverToolUse(reply),
  };
  const messageDelta = {
    type: 'message_delta',
    delta: { stop_reason: stopReason(reply.plan), stop_sequence: reply.plan.stopSequence ?? null },
    usage: finalUsage,
  };
  return {
    head: [sseEvent('message_start', JSON.stringify({ type: 'message_start', message: start }))],
    content,
    tail: [
      pending,
      sseEvent('message_delta', JSON.stringify(messageDelta)),
      sseEvent('message_stop', '{"type":"message_stop"}'),
    ],
    // Cut off inside the JSON: the SDK's JSON.parse fails on it.
    malformedFrame: sseEvent(
      'content_block_delta',
      '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"',
    ),
    errorFrame: (status) => sseEvent('error', anthropicStreamError(status)),
  };
}

/** Delta frames the stream would have had, to pace the non-stream reply like it. */
export function frameCount(plan: TurnPlan, showThinking: boolean, webSearch: boolean): number {
  const thinking = showThinking && plan.reasoning !== undefined ? plan.reasoning.pieces.length + 1 : 0;
  return thinking + plan.text.pieces.length + plan.calls.length * 2 + (webSearch ? 3 : 0);
}
