import type { CanonicalRequest } from '../../canonical/request.js';

/**
 * Whether a DeepSeek request runs in thinking mode, and the body fields that say so.
 *
 * DeepSeek has two ways in (docs/protocols/wire-deepseek.md#request, api-docs "Thinking Mode"): the `deepseek-reasoner`
 * model id always thinks, and the newer model ids (`deepseek-v4-flash` …) take a `thinking: {type: enabled|disabled}`
 * switch plus `reasoning_effort` (low / high / max). The rest of the request depends on the answer: thinking mode
 * ignores the sampling parameters, rejects logprobs, and needs the reasoning of earlier tool-call turns replayed.
 */
export interface DeepSeekThinking {
  enabled: boolean;
  /** `thinking` and `reasoning_effort`, when they are to be sent. */
  fields: { thinking?: { type: 'enabled' | 'disabled' }; reasoning_effort?: DeepSeekEffort };
  /** Reasoning parameters the model cannot honour (e.g. turning the reasoner's thinking off). */
  dropped: string[];
}

export type DeepSeekEffort = 'low' | 'high' | 'max';

/**
 * The canonical efforts on DeepSeek's three tiers. DeepSeek maps the OpenAI names itself too, but the mapping
 * changed between doc versions, so the gateway sends only the tiers every version accepts. `xhigh` asks for
 * more than `high`, and `max` is the only tier above it.
 */
const EFFORTS: Readonly<Record<string, DeepSeekEffort>> = {
  minimal: 'low',
  low: 'low',
  medium: 'high',
  high: 'high',
  xhigh: 'max',
  max: 'max',
};

/**
 * Anthropic's `budget_tokens` has no DeepSeek equivalent: bucketed onto a tier
 * (docs/protocols/translation.md#reasoning).
 */
const LOW_EFFORT_BUDGET_LIMIT = 2048;

/** `deepseek-reasoner` (R1 and its successors) thinks whatever the request says; there is no switch to send. */
export function isAlwaysThinkingModel(upstreamModel: string): boolean {
  return upstreamModel.includes('reasoner');
}

type Switch = { on: boolean; effort?: DeepSeekEffort; source: string } | undefined;

/**
 * Thinking mode for this request. Without any reasoning parameter a switchable model runs **without** thinking:
 * the catalog offers it as the cheap chat model (and thinking mode would silently ignore `temperature`), so
 * reasoning is opt-in, through `reasoning_effort`, Anthropic `thinking`, or DeepSeek's own `thinking` field.
 */
export function resolveDeepSeekThinking(request: CanonicalRequest, upstreamModel: string): DeepSeekThinking {
  const requested = requestedSwitch(request);
  if (isAlwaysThinkingModel(upstreamModel)) {
    if (requested?.on === false) return { enabled: true, fields: {}, dropped: [requested.source] };
    return {
      enabled: true,
      fields: requested?.effort === undefined ? {} : { reasoning_effort: requested.effort },
      dropped: [],
    };
  }
  if (requested?.on !== true) return { enabled: false, fields: { thinking: { type: 'disabled' } }, dropped: [] };
  return {
    enabled: true,
    fields: {
      thinking: { type: 'enabled' },
      ...(requested.effort === undefined ? {} : { reasoning_effort: requested.effort }),
    },
    dropped: [],
  };
}

/** What the client asked for, canonical parameters first, then DeepSeek's own `thinking` extension. */
function requestedSwitch(request: CanonicalRequest): Switch {
  const reasoning = request.reasoning;
  if (reasoning?.effort === 'none') return { on: false, source: 'reasoning_effort' };
  if (reasoning?.enabled === false) return { on: false, source: 'thinking' };
  if (reasoning?.effort !== undefined)
    return { on: true, effort: EFFORTS[reasoning.effort] ?? 'high', source: 'reasoning_effort' };
  if (reasoning?.budgetTokens !== undefined) {
    return { on: true, effort: reasoning.budgetTokens <= LOW_EFFORT_BUDGET_LIMIT ? 'low' : 'high', source: 'thinking' };
  }
  if (reasoning?.enabled === true) return { on: true, source: 'thinking' };
  const type = thinkingExtensionType(request);
  if (type !== undefined) return { on: type === 'enabled', source: 'thinking' };
  return undefined;
}

/** DeepSeek's `thinking: {type}` as an OpenAI client sends it (the SDK's `extra_body`), when well-formed. */
export function thinkingExtensionType(request: CanonicalRequest): 'enabled' | 'disabled' | undefined {
  if (request.extensionsProtocol !== 'openai-chat') return undefined;
  const thinking = request.extensions.thinking;
  if (thinking === null || typeof thinking !== 'object') return undefined;
  const type = (thinking as { type?: unknown }).type;
  return type === 'enabled' || type === 'disabled' ? type : undefined;
}
