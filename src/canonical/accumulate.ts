import type { ReasoningBlock, TextBlock, ToolCallBlock } from './request.js';
import type { ServerToolCallBlock, ServerToolResultBlock } from './server-tools.js';
import type { CanonicalEvent, FinishReason, TokenLogprob } from './events.js';
import { flatCopy } from './flat-string.js';
import { emptyUsage, type CanonicalUsage } from './usage.js';

export type ResponseBlock = TextBlock | ToolCallBlock | ReasoningBlock | ServerToolCallBlock | ServerToolResultBlock;

/** What one choice of a reply holds: its blocks, why it ended, and its text's log probabilities when asked for. */
export interface ChoiceContent {
  content: ResponseBlock[];
  finishReason: FinishReason | null;
  rawFinishReason: string | null;
  logprobs?: TokenLogprob[];
}

/** A whole reply: the fold of its event stream. Non-stream replies are built this way so both modes share one path. */
export interface CanonicalResponse {
  id: string;
  model: string;
  created: number;
  /** Blocks in the order they started. */
  content: ResponseBlock[];
  usage: CanonicalUsage;
  /** Whether any usage event arrived (an upstream that broke mid-stream may send none). */
  usageReported: boolean;
  finishReason: FinishReason | null;
  rawFinishReason: string | null;
  /** Which stop sequence ended the reply, when the vendor says. */
  stopSequence: string | null;
  /** The prompt-side counts the vendor told at the start, if it did (`response-start.inputUsage`). */
  inputUsage?: CanonicalUsage;
  /** The first choice's text log probabilities, when the request asked for them. */
  logprobs?: TokenLogprob[];
  /** Choices after the first, by index − 1, when the request asked for several (`content` is the first one's). */
  moreChoices?: ChoiceContent[];
}

/** Every choice of a reply in order: the first (the response's own fields), then the others. */
export function responseChoices(response: CanonicalResponse): ChoiceContent[] {
  const first: ChoiceContent = {
    content: response.content,
    finishReason: response.finishReason,
    rawFinishReason: response.rawFinishReason,
  };
  if (response.logprobs !== undefined) first.logprobs = response.logprobs;
  return [first, ...(response.moreChoices ?? [])];
}

/** Folds events one at a time; `apply` is cheap so a stream can keep a running picture of what it delivered. */
export class ResponseAccumulator {
  readonly response: CanonicalResponse = {
    id: '',
    model: '',
    created: 0,
    content: [],
    usage: emptyUsage(),
    usageReported: false,
    finishReason: null,
    rawFinishReason: null,
    stopSequence: null,
  };
  private readonly blocks = new Map<string, ResponseBlock>();
  /** The choice of each block of a choice after the first (made with the first such block: most replies have none). */
  private blockChoices: Map<string, ChoiceContent> | undefined;

  apply(event: CanonicalEvent): void {
    const response = this.response;
    switch (event.type) {
      case 'response-start':
        response.id = event.id;
        response.model = event.model;
        response.created = event.created;
        if (event.inputUsage !== undefined) response.inputUsage = event.inputUsage;
        return;
      case 'text-start':
        this.open(event.blockId, { type: 'text', text: '' }, event.choice);
        return;
      case 'text-delta': {
        const block = this.blocks.get(event.blockId);
        if (block?.type === 'text') block.text += event.text;
        if (event.logprobs !== undefined) this.addLogprobs(event.blockId, event.logprobs);
        return;
      }
      case 'reasoning-start':
        this.open(
          event.blockId,
          event.redactedData === undefined
            ? { type: 'reasoning', text: '' }
            : { type: 'reasoning', text: '', redactedData: event.redactedData },
          event.choice,
        );
        return;
      case 'reasoning-delta': {
        const block = this.blocks.get(event.blockId);
        if (block?.type === 'reasoning') block.text += event.text;
        return;
      }
      case 'reasoning-signature': {
        const block = this.blocks.get(event.blockId);
        if (block?.type === 'reasoning') block.signature = (block.signature ?? '') + event.signature;
        return;
      }
      case 'tool-call-start':
        this.open(
          event.blockId,
          { type: 'tool-call', id: event.id, name: event.name, argumentsJson: '' },
          event.choice,
        );
        return;
      case 'tool-call-delta': {
        const block = this.blocks.get(event.blockId);
        if (block?.type === 'tool-call') block.argumentsJson += event.argumentsDelta;
        return;
      }
      case 'text-citation': {
        const block = this.blocks.get(event.blockId);
        if (block?.type !== 'text') return;
        if (block.citations === undefined) block.citations = [event.citation];
        else block.citations.push(event.citation);
        return;
      }
      case 'server-tool-call':
        this.open(
          event.blockId,
          { type: 'server-tool-call', id: event.id, name: event.name, input: event.input },
          undefined,
        );
        return;
      case 'server-tool-result':
        this.open(event.blockId, event.result, undefined);
        return;
      case 'usage':
        response.usage = event.usage;
        response.usageReported = true;
        return;
      case 'finish':
        if (event.choice !== undefined && event.choice > 0) {
          const choice = this.choice(event.choice);
          choice.finishReason = event.reason;
          choice.rawFinishReason = event.rawReason;
          return;
        }
        response.finishReason = event.reason;
        response.rawFinishReason = event.rawReason;
        response.stopSequence = event.stopSequence ?? null;
        return;
      case 'text-end':
      case 'reasoning-end':
      case 'tool-call-end':
      case 'error':
        return;
    }
  }

  /**
   * Copies each growing text of the reply into one flat string (`flatCopy` says why): called once per checkpoint
   * interval by a relayed stream, not per delta.
   */
  compact(): void {
    for (const block of this.blocks.values()) {
      if (block.type === 'text' || block.type === 'reasoning') block.text = flatCopy(block.text);
      else if (block.type === 'tool-call') block.argumentsJson = flatCopy(block.argumentsJson);
    }
  }

  private open(blockId: string, block: ResponseBlock, choiceIndex: number | undefined): void {
    this.blocks.set(blockId, block);
    if (choiceIndex === undefined || choiceIndex === 0) {
      this.response.content.push(block);
      return;
    }
    const choice = this.choice(choiceIndex);
    this.blockChoices ??= new Map();
    this.blockChoices.set(blockId, choice);
    choice.content.push(block);
  }

  /** The choice at `index` (≥ 1), made with the ones before it when it is the first event of its choice. */
  private choice(index: number): ChoiceContent {
    if (this.response.moreChoices === undefined) this.response.moreChoices = [];
    const more = this.response.moreChoices;
    while (more.length < index) more.push({ content: [], finishReason: null, rawFinishReason: null });
    return more[index - 1]!;
  }

  private addLogprobs(blockId: string, logprobs: readonly TokenLogprob[]): void {
    const owner: { logprobs?: TokenLogprob[] } = this.blockChoices?.get(blockId) ?? this.response;
    if (owner.logprobs === undefined) owner.logprobs = [];
    owner.logprobs.push(...logprobs);
  }
}

/**
 * A reply already folded by whoever read it (the pipeline, for a non-stream reply it had whole): iterating it
 * gives its events, and `accumulate` takes the folded response without folding the events a second time.
 * Never holds an `error` event.
 */
export class FoldedEvents implements AsyncIterable<CanonicalEvent> {
  constructor(
    readonly events: readonly CanonicalEvent[],
    readonly response: CanonicalResponse,
  ) {}

  async *[Symbol.asyncIterator](): AsyncGenerator<CanonicalEvent, void, undefined> {
    yield* this.events;
  }
}

/** Folds a whole event stream into one response; an `error` event is thrown as its GatewayError. */
export async function accumulate(events: AsyncIterable<CanonicalEvent>): Promise<CanonicalResponse> {
  if (events instanceof FoldedEvents) return events.response;
  const accumulator = new ResponseAccumulator();
  for await (const event of events) {
    if (event.type === 'error') throw event.error;
    accumulator.apply(event);
  }
  return accumulator.response;
}
