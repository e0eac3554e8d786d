import type { Citation } from '../../canonical/server-tools.js';
import { citationSpan } from '../shared/citation-span.js';
import type { CanonicalResponse } from '../../canonical/accumulate.js';
import type { FinishReason } from '../../canonical/events.js';
import type { ReasoningBlock, VendorName } from '../../canonical/request.js';
import { totalInputTokens, type CanonicalUsage } from '../../canonical/usage.js';
import { encodeOpenAILogprobs, type OpenAILogprobEntry } from '../shared/openai-logprobs.js';
import { costFields } from '../shared/cost-fields.js';
import type { ResponsesOptions } from './responses-decode-request.js';
import { encodeReasoningBlob } from './responses-reasoning-blob.js';

export interface ResponsesContext {
  /** `resp_…`: the id the client sees and the store keys on. */
  id: string;
  /** The public model id that answered. */
  model: string;
  /** Unix seconds. */
  createdAt: number;
  /** Which vendor answered: reasoning blobs are tagged with it. */
  vendor: VendorName;
  options: ResponsesOptions;
}

/** An output item as the wire carries it (`ResponseOutputItem` of the SDK). */
export type ResponsesOutputItem = Record<string, unknown> & { type: string; id: string };

export type ResponseStatus = 'completed' | 'incomplete' | 'failed' | 'in_progress';

/** Length and content-filter stops end a response `incomplete`; every other stop (tool calls too) `completed`. */
export function statusOf(reason: FinishReason | null): {
  status: ResponseStatus;
  incompleteDetails: { reason: string } | null;
} {
  if (reason === 'length') return { status: 'incomplete', incompleteDetails: { reason: 'max_output_tokens' } };
  if (reason === 'content-filter') return { status: 'incomplete', incompleteDetails: { reason: 'content_filter' } };
  return { status: 'completed', incompleteDetails: null };
}

export function encodeResponsesUsage(usage: CanonicalUsage, costNano?: bigint): Record<string, unknown> {
  const input = totalInputTokens(usage);
  // The openai SDK's `ResponseUsage` (7.57) requires `cache_write_tokens` beside `cached_tokens`: 0 when none.
  const inputDetails = { cached_tokens: usage.cacheReadTokens, cache_write_tokens: usage.cacheWriteTokens };
  const encoded: Record<string, unknown> = {
    input_tokens: input,
    input_tokens_details: inputDetails,
    output_tokens: usage.outputTokens,
    output_tokens_details: { reasoning_tokens: usage.reasoningTokens },
    total_tokens: input + usage.outputTokens,
  };
  return costNano === undefined ? encoded : { ...encoded, ...costFields(costNano) };
}

/** A reasoning item with its blob (always kept in the store; shown to the client only when `include` asks). */
export function reasoningItem(
  id: string,
  block: ReasoningBlock,
  vendor: VendorName,
  showSummary: boolean,
): ResponsesOutputItem {
  return {
    type: 'reasoning',
    id,
    summary: showSummary && block.text !== '' ? [{ type: 'summary_text', text: block.text }] : [],
    encrypted_content: encodeReasoningBlob(vendor, block),
  };
}

/** A message item; `logprobs` are its text's tokens when the request asked for them, `annotations` its sources. */
export function messageItem(
  id: string,
  text: string,
  status: string,
  logprobs: OpenAILogprobEntry[] = [],
  annotations: unknown[] = [],
): ResponsesOutputItem {
  return {
    type: 'message',
    id,
    role: 'assistant',
    status,
    content: [{ type: 'output_text', text, annotations, logprobs }],
  };
}

/** A web search the reply ran (whichever vendor ran it), as the Responses API shows one. */
export function webSearchCallItem(id: string, input: unknown, status: string): ResponsesOutputItem {
  const query = (input as { query?: unknown } | null)?.query;
  return {
    type: 'web_search_call',
    id,
    status,
    action: { type: 'search', query: typeof query === 'string' ? query : '' },
  };
}

/** A citation of a text block as a Responses `url_citation` annotation of the message text. */
export function urlCitation(citation: Citation, blockText: string, blockOffset: number): Record<string, unknown> {
  return {
    type: 'url_citation',
    url: citation.url,
    title: citation.title ?? citation.url,
    ...citationSpan(citation, blockText, blockOffset),
  };
}

/**
 * The tool a call names, as the client declared it: a namespaced tool's flat vendor name split back into
 * `namespace` and `name` (see decodeTools).
 */
export function clientToolName(vendorName: string, options: ResponsesOptions): { name: string; namespace?: string } {
  return options.namespacedTools.get(vendorName) ?? { name: vendorName };
}

export function functionCallItem(
  id: string,
  callId: string,
  vendorName: string,
  args: string,
  status: string,
  options: ResponsesOptions,
): ResponsesOutputItem {
  return {
    type: 'function_call',
    id,
    call_id: callId,
    ...clientToolName(vendorName, options),
    arguments: args,
    status,
  };
}

export function customToolCallItem(
  id: string,
  callId: string,
  vendorName: string,
  input: string,
  options: ResponsesOptions,
): ResponsesOutputItem {
  return { type: 'custom_tool_call', id, call_id: callId, ...clientToolName(vendorName, options), input };
}

/** A custom tool's raw input from the arguments the model wrote for its one-string-argument function. */
export function customToolInput(argumentsJson: string): string {
  try {
    const parsed = JSON.parse(argumentsJson) as unknown;
    if (parsed !== null && typeof parsed === 'object' && typeof (parsed as { input?: unknown }).input === 'string')
      return (parsed as { input: string }).input;
  } catch {
    // Not JSON (a cut-off reply): the text as it came.
  }
  return argumentsJson;
}

/** The canonical reply's blocks as output items, in order; consecutive text blocks make one message. */
export function outputItems(response: CanonicalResponse, context: ResponsesContext): ResponsesOutputItem[] {
  const items: ResponsesOutputItem[] = [];
  const itemId = (prefix: string) => `${prefix}_${context.id.slice('resp_'.length)}_${items.length}`;
  let message: ResponsesOutputItem | undefined;
  // The reply's tokens go to its first message (nearly always its only one: text after a tool call is rare).
  let logprobs = encodeOpenAILogprobs(response.logprobs ?? []);
  for (const block of response.content) {
    if (block.type === 'text') {
      if (block.text === '') continue;
      if (message === undefined) {
        message = messageItem(itemId('msg'), '', 'completed', logprobs, []);
        logprobs = [];
        items.push(message);
      }
      const part = (message.content as Array<{ text: string; annotations: unknown[] }>)[0]!;
      for (const citation of block.citations ?? [])
        if (citation.url !== '') part.annotations.push(urlCitation(citation, block.text, part.text.length));
      part.text += block.text;
      continue;
    }
    message = undefined;
    if (block.type === 'server-tool-call') {
      items.push(webSearchCallItem(itemId('ws'), block.input, 'completed'));
    } else if (block.type === 'reasoning') {
      if (block.text === '' && block.signature === undefined && block.redactedData === undefined) continue;
      items.push(reasoningItem(itemId('rs'), block, context.vendor, context.options.showReasoningSummary));
    } else if (block.type !== 'tool-call') {
    } else if (context.options.customTools.has(block.name)) {
      items.push(
        customToolCallItem(itemId('ctc'), block.id, block.name, customToolInput(block.argumentsJson), context.options),
      );
    } else {
      items.push(
        functionCallItem(itemId('fc'), block.id, block.name, block.argumentsJson, 'completed', context.options),
      );
    }
  }
  return items;
}

/** Items as the client sees them: reasoning blobs only when `include` has `reasoning.encrypted_content`. */
export function presentItems(
  items: readonly ResponsesOutputItem[],
  includeEncryptedReasoning: boolean,
): ResponsesOutputItem[] {
  if (includeEncryptedReasoning) return items as ResponsesOutputItem[];
  return items.map((item) => {
    if (item.type !== 'reasoning') return item;
    const { encrypted_content: _blob, ...rest } = item;
    return rest as ResponsesOutputItem;
  });
}

export interface ResponseObjectParts {
  status: ResponseStatus;
  incompleteDetails: { reason: string } | null;
  error: { code: string; message: string } | null;
  output: ResponsesOutputItem[];
  usage: Record<string, unknown> | null;
}

/**
 * The `response` object (docs/protocols/wire-openai-responses.md#response-object): the request's echo around the
 * output.
 */
export function responseObject(context: ResponsesContext, parts: ResponseObjectParts): Record<string, unknown> {
  const echo = context.options.echo;
  const outputText = parts.output
    .filter((item) => item.type === 'message')
    .flatMap((item) => item.content as Array<{ type: string; text?: string }>)
    .map((part) => (part.type === 'output_text' ? (part.text ?? '') : ''))
    .join('');
  return {
    id: context.id,
    object: 'response',
    // No access program is chosen: the API's null for its standard one.
    access_programs: null,
    created_at: context.createdAt,
    status: parts.status,
    ...(parts.status === 'completed' ? { completed_at: Math.floor(Date.now() / 1000) } : {}),
    background: false,
    error: parts.error,
    incomplete_details: parts.incompleteDetails,
    instructions: echo.instructions,
    max_output_tokens: echo.max_output_tokens,
    max_tool_calls: null,
    model: context.model,
    output: parts.output,
    output_text: outputText,
    parallel_tool_calls: echo.parallel_tool_calls,
    previous_response_id: echo.previous_response_id,
    prompt_cache_key: echo.prompt_cache_key,
    prompt_cache_retention: echo.prompt_cache_retention,
    reasoning: echo.reasoning,
    service_tier: 'default',
    store: echo.store,
    temperature: echo.temperature,
    text: echo.text,
    tool_choice: echo.tool_choice,
    tools: echo.tools,
    top_p: echo.top_p,
    truncation: echo.truncation,
    usage: parts.usage,
    user: echo.user,
    metadata: echo.metadata,
  };
}

/** A whole canonical reply as a `response` object, plus the full items (with blobs) a store keeps. */
export function encodeResponsesResponse(
  response: CanonicalResponse,
  context: ResponsesContext,
  costNano?: bigint,
): { body: Record<string, unknown>; stored: Record<string, unknown> } {
  const items = outputItems(response, context);
  const { status, incompleteDetails } = statusOf(response.finishReason);
  const parts = { status, incompleteDetails, error: null, usage: encodeResponsesUsage(response.usage, costNano) };
  return {
    body: responseObject(context, { ...parts, output: presentItems(items, context.options.includeEncryptedReasoning) }),
    stored: responseObject(context, { ...parts, output: items }),
  };
}
