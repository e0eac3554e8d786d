import type { CanonicalRequest, ResponseFormat } from '../../canonical/request.js';
import { buildOpenAIToolChoice, buildOpenAITools, openAILogprobsFields } from '../openai/openai-build-request.js';
import { buildDeepSeekMessages } from './deepseek-messages.js';
import { resolveDeepSeekThinking, thinkingExtensionType } from './deepseek-thinking.js';
import { unsupportedPromptCacheFields } from '../prompt-cache-fields.js';

export interface BuiltDeepSeekRequest {
  body: Record<string, unknown>;
  droppedParameters: string[];
}

/**
 * Canonical request → DeepSeek chat-completions body (docs/protocols/wire-deepseek.md#request). Only fields DeepSeek
 * documents are sent; everything else is left out and reported in `droppedParameters`. The policies are listed at the
 * top of `deepseek-provider.ts`.
 */
export function buildDeepSeekRequest(request: CanonicalRequest, upstreamModel: string): BuiltDeepSeekRequest {
  const thinking = resolveDeepSeekThinking(request, upstreamModel);
  const dropped: string[] = [...thinking.dropped];
  const jsonSchema = jsonSchemaInstruction(request.responseFormat);
  const messages = buildDeepSeekMessages(request, {
    publicModel: request.model,
    thinking: thinking.enabled,
    ...(jsonSchema === undefined ? {} : { extraSystem: jsonSchema }),
  });
  const body: Record<string, unknown> = { model: upstreamModel, messages, ...thinking.fields };

  const { sampling } = request;
  // Thinking mode accepts but ignores these: left out so the client learns they had no effect.
  const samplingFields: Array<[string, number | undefined]> = [
    ['temperature', sampling.temperature],
    ['top_p', sampling.topP],
    ['presence_penalty', sampling.presencePenalty],
    ['frequency_penalty', sampling.frequencyPenalty],
  ];
  for (const [field, value] of samplingFields) {
    if (value === undefined) continue;
    if (thinking.enabled) dropped.push(field);
    else body[field] = value;
  }
  if (sampling.topK !== undefined) dropped.push('top_k');
  if (sampling.seed !== undefined) dropped.push('seed');
  if (sampling.stop !== undefined && sampling.stop.length > 0) body.stop = sampling.stop;
  // DeepSeek documents only `max_tokens` (it includes the chain of thought in thinking mode).
  if (request.maxOutputTokens !== undefined) body.max_tokens = request.maxOutputTokens;

  if (request.tools !== undefined && request.tools.length > 0) {
    // `strict` belongs to DeepSeek's beta endpoint only; the function schema itself is still sent.
    if (request.tools.some((tool) => tool.strict !== undefined)) dropped.push('tools.strict');
    body.tools = buildOpenAITools(request.tools.map(({ strict: _strict, ...tool }) => tool));
  }
  if (request.toolChoice !== undefined) body.tool_choice = buildOpenAIToolChoice(request.toolChoice);
  if (request.parallelToolCalls !== undefined) dropped.push('parallel_tool_calls');

  if (request.responseFormat !== undefined) {
    body.response_format = { type: request.responseFormat.type === 'text' ? 'text' : 'json_object' };
    if (jsonSchema !== undefined) dropped.push('response_format.json_schema');
  }
  if (request.user !== undefined) dropped.push('user');
  if (request.safetyIdentifier !== undefined) dropped.push('safety_identifier');
  // The pipeline refused log probabilities in thinking mode, where DeepSeek answers them with a 400.
  if (!thinking.enabled) Object.assign(body, openAILogprobsFields(request));
  // DeepSeek caches by prefix on its own and has no cache key.
  dropped.push(...unsupportedPromptCacheFields(request));

  for (const field of Object.keys(request.extensions)) {
    if (request.extensionsProtocol !== 'openai-chat') dropped.push(field);
    else if (field === 'thinking' && thinkingExtensionType(request) !== undefined)
      continue; // read by resolveDeepSeekThinking
    else dropped.push(field);
  }

  body.stream = request.stream;
  // Always ask for usage: billing reads it, whatever the client asked for.
  if (request.stream) body.stream_options = { include_usage: true };
  return { body, droppedParameters: dropped };
}

/**
 * DeepSeek has JSON mode (`json_object`) but no schema-constrained output. A `json_schema` request is served
 * as JSON mode plus a system instruction carrying the schema — the reply is valid JSON that the model was
 * told to shape, not a guaranteed match — and `response_format.json_schema` is reported as dropped so the
 * client can tell. The instruction also names "JSON", which DeepSeek's JSON mode requires of the prompt.
 */
function jsonSchemaInstruction(format: ResponseFormat | undefined): string | undefined {
  if (format?.type !== 'json_schema') return undefined;
  const lines = [`Reply with a single JSON object named "${format.name}" and nothing else.`];
  if (format.description !== undefined) lines.push(`It is: ${format.description}`);
  if (format.schema !== undefined) lines.push(`It must conform to this JSON Schema:\n${JSON.stringify(format.schema)}`);
  return lines.join('\n');
}
