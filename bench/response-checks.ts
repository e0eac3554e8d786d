/**
 * What counts as a correct answer, so a fast wrong answer (an error body, an empty or cut stream, another
 * request's reply, missing usage) cannot win the comparison. Every reply must carry exactly the text the
 * mock upstream sent for this request's nonce, in as many content deltas as it sent (20 unless the scenario
 * asks for a long stream) when streamed, and exactly the mock's usage. Written independently of the gateway's own SSE decoder and encoders: the bench must not share the
 * code whose output it judges.
 */
import { completionTokens, PROMPT_TOKENS, REPLY_CHUNKS } from './mock-reply.js';

export type Protocol = 'openai' | 'anthropic';

/** Why a non-stream body is not the expected reply, or undefined when it is. */
export function jsonReplyProblem(
  protocol: Protocol,
  bodyText: string,
  expectedText: string,
  chunks = REPLY_CHUNKS,
): string | undefined {
  const completion = completionTokens(chunks);
  let body: unknown;
  try {
    body = JSON.parse(bodyText);
  } catch {
    return `body is not JSON: ${snippet(bodyText)}`;
  }
  if (protocol === 'openai') {
    const reply = body as { choices?: { message?: { content?: unknown } }[]; usage?: Record<string, unknown> };
    const content = reply.choices?.[0]?.message?.content;
    if (content !== expectedText) return `choices[0].message.content is not the mock's text: ${snippet(bodyText)}`;
    return openaiUsageProblem(reply.usage, completion) ?? undefined;
  }
  const message = body as {
    type?: unknown;
    content?: { type?: unknown; text?: unknown }[];
    usage?: Record<string, unknown>;
  };
  const text = (message.content ?? [])
    .map((block) => (block.type === 'text' && typeof block.text === 'string' ? block.text : ''))
    .join('');
  if (message.type !== 'message' || text !== expectedText)
    return `content text is not the mock's text: ${snippet(bodyText)}`;
  if (message.usage?.input_tokens !== PROMPT_TOKENS || message.usage.output_tokens !== completion) {
    return `usage is not input ${PROMPT_TOKENS} / output ${completion}: ${snippet(JSON.stringify(message.usage))}`;
  }
  return undefined;
}

function openaiUsageProblem(usage: Record<string, unknown> | null | undefined, completion: number): string | undefined {
  if (
    usage?.prompt_tokens === PROMPT_TOKENS &&
    usage.completion_tokens === completion &&
    usage.total_tokens === PROMPT_TOKENS + completion
  ) {
    return undefined;
  }
  return `usage is not ${PROMPT_TOKENS} + ${completion} tokens: ${snippet(JSON.stringify(usage ?? null))}`;
}

/**
 * Follows one SSE stream as its bytes arrive. `push` returns how many content deltas the piece completed,
 * so the caller can time the first token and see whether deltas arrived one by one or in bunches.
 */
export class StreamCheck {
  private readonly decoder = new TextDecoder('utf-8');
  private partialLine = '';
  private text = '';
  private contentDeltas = 0;
  private sawUsage = false;
  private sawEnd = false;
  private sawDone = false;
  private inputTokens: unknown;
  private problem: string | undefined;

  constructor(
    private readonly protocol: Protocol,
    private readonly expectedText: string,
    private readonly expectedChunks = REPLY_CHUNKS,
  ) {}

  push(piece: Uint8Array): number {
    const before = this.contentDeltas;
    this.feed(this.decoder.decode(piece, { stream: true }));
    return this.contentDeltas - before;
  }

  /** Why the finished stream is not the expected one, or undefined when it is. */
  finish(): string | undefined {
    this.feed(`${this.decoder.decode()}\n`);
    if (this.problem !== undefined) return this.problem;
    if (this.protocol === 'openai' ? !this.sawDone : !this.sawEnd) {
      return this.protocol === 'openai' ? 'stream ended without data: [DONE]' : 'stream ended without message_stop';
    }
    if (this.text !== this.expectedText) return `streamed text is not the mock's text: ${snippet(this.text)}`;
    if (this.contentDeltas !== this.expectedChunks)
      return `${this.contentDeltas} content deltas, the mock sent ${this.expectedChunks}`;
    if (!this.sawUsage) return "stream had no usage with the mock's token counts";
    return undefined;
  }

  private feed(text: string): void {
    let start = 0;
    let end = text.indexOf('\n');
    while (end !== -1) {
      let line = this.partialLine + text.slice(start, end);
      this.partialLine = '';
      if (line.endsWith('\r')) line = line.slice(0, -1);
      this.line(line);
      start = end + 1;
      end = text.indexOf('\n', start);
    }
    this.partialLine += text.slice(start);
  }

  private line(line: string): void {
    // Blank lines, comments and `event:`/`id:` fields carry nothing this check needs (the JSON names its type).
    if (!line.startsWith('data:') || this.problem !== undefined) return;
    const data = line.slice(line.charAt(5) === ' ' ? 6 : 5);
    if (data === '[DONE]') {
      // OpenAI streams end with it; Tollgate's spec (4.3) ends messages streams with it too, after message_stop.
      if (this.protocol === 'anthropic' && !this.sawEnd) this.problem = 'data: [DONE] before message_stop';
      this.sawEnd = true;
      this.sawDone = true;
      return;
    }
    if (this.sawEnd || this.sawDone) {
      this.problem = `data after the end of the stream: ${snippet(data)}`;
      return;
    }
    let event: Record<string, unknown>;
    try {
      event = JSON.parse(data) as Record<string, unknown>;
    } catch {
      this.problem = `stream data is not JSON: ${snippet(data)}`;
      return;
    }
    if (event.error !== undefined || event.type === 'error') {
      this.problem = `error event in stream: ${snippet(data)}`;
      return;
    }
    if (this.protocol === 'openai') this.openaiChunk(event);
    else this.anthropicEvent(event);
  }

  private openaiChunk(chunk: Record<string, unknown>): void {
    const choices = chunk.choices as { delta?: { content?: unknown } }[] | undefined;
    const content = choices?.[0]?.delta?.content;
    if (typeof content === 'string' && content.length > 0) this.delta(content);
    const usage = chunk.usage as Record<string, unknown> | null | undefined;
    if (usage !== null && usage !== undefined) {
      const problem = openaiUsageProblem(usage, completionTokens(this.expectedChunks));
      if (problem !== undefined) this.problem = problem;
      else this.sawUsage = true;
    }
  }

  private anthropicEvent(event: Record<string, unknown>): void {
    switch (event.type) {
      case 'message_start':
        this.inputTokens = (event.message as { usage?: { input_tokens?: unknown } } | undefined)?.usage?.input_tokens;
        return;
      case 'content_block_delta': {
        const delta = event.delta as { type?: unknown; text?: unknown } | undefined;
        if (delta?.type === 'text_delta' && typeof delta.text === 'string' && delta.text.length > 0)
          this.delta(delta.text);
        return;
      }
      case 'message_delta': {
        const usage = event.usage as { input_tokens?: unknown; output_tokens?: unknown } | undefined;
        const input = usage?.input_tokens ?? this.inputTokens;
        const output = completionTokens(this.expectedChunks);
        if (input !== PROMPT_TOKENS || usage?.output_tokens !== output) {
          this.problem = `usage is not input ${PROMPT_TOKENS} / output ${output}: ${snippet(JSON.stringify(event))}`;
        } else {
          this.sawUsage = true;
        }
        return;
      }
      case 'message_stop':
        if (this.sawEnd) this.problem = 'second message_stop';
        this.sawEnd = true;
        return;
      default:
        return;
    }
  }

  private delta(content: string): void {
    this.contentDeltas++;
    this.text += content;
  }
}

export function snippet(text: string, length = 160): string {
  const flat = text.replaceAll(/\s+/g, ' ').trim();
  return flat.length > length ? `${flat.slice(0, length)}…` : flat;
}
