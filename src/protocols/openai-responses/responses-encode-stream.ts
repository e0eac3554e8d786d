import { flatCopy } from '../../canonical/flat-string.js';
import { encodeOpenAILogprobs, type OpenAILogprobEntry } from '../shared/openai-logprobs.js';
import type { GatewayError } from '../../canonical/errors.js';
import type { CanonicalEvent, FinishReason } from '../../canonical/events.js';
import type { ReasoningBlock } from '../../canonical/request.js';
import type { Citation } from '../../canonical/server-tools.js';
import type { CanonicalUsage } from '../../canonical/usage.js';
import { SSE_DONE, sseEvent } from '../../streaming/sse-writer.js';
import type { StreamEncoder } from '../shared/reply-exchange.js';
import {
  clientToolName,
  customToolCallItem,
  customToolInput,
  encodeResponsesUsage,
  functionCallItem,
  messageItem,
  presentItems,
  reasoningItem,
  responseObject,
  statusOf,
  urlCitation,
  webSearchCallItem,
  type ResponsesContext,
  type ResponsesOutputItem,
} from './responses-encode-response.js';
import { encodeResponseFailure, encodeResponsesError } from './responses-encode-error.js';

interface ItemState {
  kind: 'message' | 'reasoning' | 'function_call' | 'custom_tool_call' | 'web_search_call';
  id: string;
  outputIndex: number;
  opened: boolean;
  done: boolean;
  text: string;
  /** Messages only: the text's tokens, when the request asked for them. */
  logprobs?: OpenAILogprobEntry[];
  /** Reasoning only. */
  block?: ReasoningBlock;
  summaryOpened?: boolean;
  /** Function calls only. */
  callId?: string;
  name?: string;
  /** Messages only: the sources the text cites, annotated once the text is whole. */
  citations?: Citation[];
  /** Web searches only: what was searched. */
  input?: unknown;
  /** The final item, once done (in its full form, with the reasoning blob). */
  final?: ResponsesOutputItem;
}

/**
 * Canonical events → the Responses SSE event sequence (docs/protocols/wire-openai-responses.md#stream):
 * `response.created`, `response.in_progress`, per item `output_item.added` … `output_item.done`, then exactly one
 * terminal event (`response.completed`, `response.incomplete`, or `error` + `response.failed`), then `data: [DONE]`.
 *
 * Text and reasoning items open at their first content (an empty block never becomes an item); `output_index`
 * is given in opening order, so it is dense as the SDK's accumulator requires. Items may interleave (parallel tool
 * calls' arguments), which the protocol allows since every event names its item. Every event carries
 * `sequence_number`, 0, 1, 2, …
 */
export class ResponsesStreamEncoder implements StreamEncoder {
  private readonly items = new Map<string, ItemState>();
  private readonly ordered: ItemState[] = [];
  private sequence = 0;
  private started = false;
  private finishReason: FinishReason | null = null;
  /** A terminal event went out (`response.failed`): nothing follows it. */
  private ended = false;
  /** The response as the store keeps it, once the terminal event went out. */
  stored: Record<string, unknown> | undefined;

  constructor(
    private readonly context: ResponsesContext,
    /** Awaited before the terminal event, with the final response (full items): storing it, so a GET after it finds it. */
    private readonly onFinal?: (stored: Record<string, unknown>) => Promise<void>,
  ) {}

  /** The text of the items still streaming, each as one flat string (`flatCopy` says why): every few seconds. */
  compact(): void {
    for (const item of this.items.values()) {
      if (item.done) continue;
      item.text = flatCopy(item.text);
      if (item.block !== undefined) item.block.text = flatCopy(item.block.text);
    }
  }

  encode(event: CanonicalEvent): string {
    if (this.ended) return '';
    let out = this.start();
    switch (event.type) {
      case 'text-start':
        this.items.set(event.blockId, this.newItem('message', 'msg'));
        break;
      case 'text-delta': {
        const item = this.items.get(event.blockId);
        if (item === undefined || item.done || event.text === '') break;
        out += this.openMessage(item);
        item.text += event.text;
        const logprobs = event.logprobs === undefined ? [] : encodeOpenAILogprobs(event.logprobs);
        if (logprobs.length > 0) {
          if (item.logprobs === undefined) item.logprobs = [];
          item.logprobs.push(...logprobs);
        }
        out += this.emit('response.output_text.delta', {
          item_id: item.id,
          output_index: item.outputIndex,
          content_index: 0,
          delta: event.text,
          logprobs,
        });
        break;
      }
      case 'reasoning-start': {
        const item = this.newItem('reasoning', 'rs');
        item.block =
          event.redactedData === undefined
            ? { type: 'reasoning', text: '' }
            : { type: 'reasoning', text: '', redactedData: event.redactedData };
        this.items.set(event.blockId, item);
        if (event.redactedData !== undefined) out += this.openReasoning(item);
        break;
      }
      case 'reasoning-delta': {
        const item = this.items.get(event.blockId);
        if (item === undefined || item.done || event.text === '') break;
        out += this.openReasoning(item);
        item.block!.text += event.text;
        if (this.context.options.showReasoningSummary) {
          if (item.summaryOpened !== true) {
            item.summaryOpened = true;
            out += this.emit('response.reasoning_summary_part.added', {
              item_id: item.id,
              output_index: item.outputIndex,
              summary_index: 0,
              part: { type: 'summary_text', text: '' },
            });
          }
          out += this.emit('response.reasoning_summary_text.delta', {
            item_id: item.id,
            output_index: item.outputIndex,
            summary_index: 0,
            delta: event.text,
          });
        }
        break;
      }
      case 'reasoning-signature': {
        const item = this.items.get(event.blockId);
        if (item === undefined || item.done) break;
        out += this.openReasoning(item);
        item.block!.signature = (item.block!.signature ?? '') + event.signature;
        break;
      }
      case 'tool-call-start': {
        const custom = this.context.options.customTools.has(event.name);
        const item = custom ? this.newItem('custom_tool_call', 'ctc') : this.newItem('function_call', 'fc');
        item.callId = event.id;
        item.name = event.name;
        this.items.set(event.blockId, item);
        const { options } = this.context;
        out += this.open(
          item,
          custom
            ? customToolCallItem(item.id, event.id, event.name, '', options)
            : functionCallItem(item.id, event.id, event.name, '', 'in_progress', options),
        );
        break;
      }
      case 'tool-call-delta': {
        const item = this.items.get(event.blockId);
        if (item === undefined || item.done || event.argumentsDelta === '') break;
        item.text += event.argumentsDelta;
        // A custom tool's input is inside the JSON arguments: it is sent whole when the call ends.
        if (item.kind === 'function_call') {
          out += this.emit('response.function_call_arguments.delta', {
            item_id: item.id,
            output_index: item.outputIndex,
            delta: event.argumentsDelta,
          });
        }
        break;
      }
      case 'text-citation': {
        const item = this.items.get(event.blockId);
        if (item?.kind !== 'message' || item.done || event.citation.url === '') break;
        if (item.citations === undefined) item.citations = [event.citation];
        else item.citations.push(event.citation);
        break;
      }
      case 'server-tool-call': {
        // A search the vendor ran, whole: Responses shows it as a web_search_call item, searched and completed.
        const item = this.newItem('web_search_call', 'ws');
        item.input = event.input;
        this.items.set(event.blockId, item);
        out += this.open(item, webSearchCallItem(item.id, event.input, 'in_progress'));
        const where = { item_id: item.id, output_index: item.outputIndex };
        out += this.emit('response.web_search_call.in_progress', where);
        out += this.emit('response.web_search_call.searching', where);
        out += this.emit('response.web_search_call.completed', where);
        out += this.close(item);
        break;
      }
      case 'server-tool-result':
        break;
      case 'text-end':
      case 'reasoning-end':
      case 'tool-call-end': {
        const item = this.items.get(event.blockId);
        if (item !== undefined) out += this.close(item);
        break;
      }
      case 'finish':
        this.finishReason = event.reason;
        break;
      case 'error':
        out += this.error(event.error);
        break;
      case 'response-start':
      case 'usage':
        break;
    }
    return out;
  }

  /** Before the terminal event: the final response handed to the store (awaited by the exchange). */
  async beforeFinish(usage: CanonicalUsage, costNano?: bigint): Promise<void> {
    if (this.onFinal === undefined || this.ended) return;
    // Closing is idempotent: `finish` finds the items closed and writes only what is left.
    this.pendingClose = this.closeAll();
    this.stored = this.final(usage, costNano, true);
    await this.onFinal(this.stored);
  }

  /** Frames of items `beforeFinish` closed, still to be written by `finish`. */
  private pendingClose = '';

  finish(usage: CanonicalUsage, costNano?: bigint): string {
    if (this.ended) return '';
    this.ended = true;
    let out = this.start() + this.pendingClose + this.closeAll();
    this.pendingClose = '';
    const { status } = statusOf(this.finishReason);
    const response = this.final(usage, costNano, false);
    out += this.emit(status === 'completed' ? 'response.completed' : 'response.incomplete', { response });
    return out + SSE_DONE;
  }

  /**
   * A failure after the headers went out: an `error` event with the catalog code, then `response.failed` (both
   * SDKs and Codex read it) with the published enum's code.
   */
  error(error: GatewayError): string {
    if (this.ended) return '';
    this.ended = true;
    let out = this.start();
    const body = encodeResponsesError(error).error;
    out += this.emit('error', { code: body.code, message: body.message, param: body.param });
    const response = responseObject(this.context, {
      status: 'failed',
      incompleteDetails: null,
      error: encodeResponseFailure(error),
      output: presentItems(this.doneItems(), this.context.options.includeEncryptedReasoning),
      usage: null,
    });
    return out + this.emit('response.failed', { response }) + SSE_DONE;
  }

  private final(usage: CanonicalUsage, costNano: bigint | undefined, full: boolean): Record<string, unknown> {
    const { status, incompleteDetails } = statusOf(this.finishReason);
    const items = this.doneItems();
    return responseObject(this.context, {
      status,
      incompleteDetails,
      error: null,
      output: full ? items : presentItems(items, this.context.options.includeEncryptedReasoning),
      usage: encodeResponsesUsage(usage, costNano),
    });
  }

  private doneItems(): ResponsesOutputItem[] {
    return this.ordered.filter((item) => item.final !== undefined).map((item) => item.final!);
  }

  private start(): string {
    if (this.started) return '';
    this.started = true;
    const response = responseObject(this.context, {
      status: 'in_progress',
      incompleteDetails: null,
      error: null,
      output: [],
      usage: null,
    });
    return this.emit('response.created', { response }) + this.emit('response.in_progress', { response });
  }

  private newItem(kind: ItemState['kind'], prefix: string): ItemState {
    return {
      kind,
      id: `${prefix}_${this.context.id.slice('resp_'.length)}_${this.items.size}`,
      outputIndex: -1,
      opened: false,
      done: false,
      text: '',
    };
  }

  private open(item: ItemState, shown: ResponsesOutputItem): string {
    item.opened = true;
    item.outputIndex = this.ordered.length;
    this.ordered.push(item);
    return this.emit('response.output_item.added', { output_index: item.outputIndex, item: shown });
  }

  private openMessage(item: ItemState): string {
    if (item.opened) return '';
    const shown = { ...messageItem(item.id, '', 'in_progress'), content: [] };
    return (
      this.open(item, shown) +
      this.emit('response.content_part.added', {
        item_id: item.id,
        output_index: item.outputIndex,
        content_index: 0,
        part: { type: 'output_text', text: '', annotations: [], logprobs: [] },
      })
    );
  }

  private openReasoning(item: ItemState): string {
    if (item.opened) return '';
    return this.open(item, { type: 'reasoning', id: item.id, summary: [] });
  }

  private closeAll(): string {
    let out = '';
    for (const item of this.ordered) out += this.close(item);
    return out;
  }

  private close(item: ItemState): string {
    if (item.done) return '';
    item.done = true;
    if (!item.opened) return '';
    const where = { item_id: item.id, output_index: item.outputIndex };
    let out = '';
    switch (item.kind) {
      case 'message': {
        const logprobs = item.logprobs ?? [];
        const annotations = (item.citations ?? []).map((citation) => urlCitation(citation, item.text, 0));
        annotations.forEach((annotation, annotationIndex) => {
          out += this.emit('response.output_text.annotation.added', {
            ...where,
            content_index: 0,
            annotation_index: annotationIndex,
            annotation,
          });
        });
        out += this.emit('response.output_text.done', { ...where, content_index: 0, text: item.text, logprobs });
        out += this.emit('response.content_part.done', {
          ...where,
          content_index: 0,
          part: { type: 'output_text', text: item.text, annotations, logprobs },
        });
        item.final = messageItem(item.id, item.text, 'completed', logprobs, annotations);
        break;
      }
      case 'web_search_call':
        item.final = webSearchCallItem(item.id, item.input, 'completed');
        break;
      case 'reasoning': {
        const block = item.block!;
        if (item.summaryOpened === true) {
          out += this.emit('response.reasoning_summary_text.done', { ...where, summary_index: 0, text: block.text });
          out += this.emit('response.reasoning_summary_part.done', {
            ...where,
            summary_index: 0,
            part: { type: 'summary_text', text: block.text },
          });
        }
        item.final = reasoningItem(item.id, block, this.context.vendor, this.context.options.showReasoningSummary);
        break;
      }
      case 'function_call':
        out += this.emit('response.function_call_arguments.done', {
          ...where,
          name: clientToolName(item.name!, this.context.options).name,
          arguments: item.text,
        });
        item.final = functionCallItem(item.id, item.callId!, item.name!, item.text, 'completed', this.context.options);
        break;
      case 'custom_tool_call': {
        const input = customToolInput(item.text);
        if (input !== '') out += this.emit('response.custom_tool_call_input.delta', { ...where, delta: input });
        out += this.emit('response.custom_tool_call_input.done', { ...where, input });
        item.final = customToolCallItem(item.id, item.callId!, item.name!, input, this.context.options);
        break;
      }
    }
    const shown = presentItems([item.final!], this.context.options.includeEncryptedReasoning)[0]!;
    return out + this.emit('response.output_item.done', { output_index: item.outputIndex, item: shown });
  }

  private emit(type: string, body: Record<string, unknown>): string {
    const sequence = this.sequence++;
    return sseEvent(type, JSON.stringify({ type, sequence_number: sequence, ...body }));
  }
}
