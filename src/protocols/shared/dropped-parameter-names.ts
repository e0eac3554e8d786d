import type { ClientProtocol } from '../../canonical/request.js';

/**
 * Vendor adapters name the parameters they drop in one spelling (OpenAI chat's and Anthropic's snake_case:
 * `top_k`, `stop`, `thinking`, `reasoning_effort`, …), whichever client sent them. `x-tollgate-dropped-params`
 * must name the field as the client wrote it, so each protocol renames the ones it spells otherwise. A name with
 * no entry is already the client's own (an extension field, a tool type), and is kept as it is.
 */
const SPELLINGS: Record<ClientProtocol, Readonly<Record<string, string>>> = {
  'openai-chat': {
    thinking: 'reasoning_effort',
    stop_sequences: 'stop',
    strict: 'tools.strict',
  },
  'anthropic-messages': {
    stop: 'stop_sequences',
    reasoning_effort: 'output_config.effort',
    reasoning_budget_tokens: 'thinking.budget_tokens',
    strict: 'tools.strict',
    user: 'metadata.user_id',
    parallel_tool_calls: 'tool_choice.disable_parallel_tool_use',
  },
  'openai-responses': {
    thinking: 'reasoning.effort',
    reasoning_effort: 'reasoning.effort',
    reasoning_budget_tokens: 'reasoning.effort',
    strict: 'tools.strict',
    'response_format.json_schema': 'text.format',
    stop_sequences: 'stop',
  },
  'gemini-generate': {
    temperature: 'generationConfig.temperature',
    top_p: 'generationConfig.topP',
    top_k: 'generationConfig.topK',
    stop: 'generationConfig.stopSequences',
    stop_sequences: 'generationConfig.stopSequences',
    presence_penalty: 'generationConfig.presencePenalty',
    frequency_penalty: 'generationConfig.frequencyPenalty',
    seed: 'generationConfig.seed',
    thinking: 'generationConfig.thinkingConfig',
    reasoning_effort: 'generationConfig.thinkingConfig.thinkingLevel',
    reasoning_budget_tokens: 'generationConfig.thinkingConfig.thinkingBudget',
    tool_choice: 'toolConfig.functionCallingConfig',
    'response_format.json_schema': 'generationConfig.responseJsonSchema',
    strict: 'tools.functionDeclarations',
    'tools.strict': 'tools.functionDeclarations',
  },
};

/** The dropped parameters as the client's protocol spells them, each once, in the order first named. */
export function droppedParametersAsClientNames(protocol: ClientProtocol, names: Iterable<string>): string[] {
  const spelling = SPELLINGS[protocol];
  const out = new Set<string>();
  for (const name of names) out.add(spelling[name] ?? name);
  return [...out];
}
