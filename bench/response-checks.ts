/**
 * What counts as a correct answer, so a fast wrong answer (an error body, an empty stream, a stream cut
 * before its end) cannot win the comparison. Written independently of the gateway's own SSE decoder and
 * encoders: the bench must not share the code whose output it judges.
 */

/** Why a non-stream body is not a valid chat completion, or undefined when it is. */
export function completionProblem(bodyText: string): string | undefined {
  let body: unknown;
  try {
    body = JSON.parse(bodyText);
  } catch {
    return `body is not JSON: ${snippet(bodyText)}`;
  }
  const completion = body as { choices?: { message?: { content?: unknown } }[]; usage?: { total_tokens?: unknown } };
  const content = completion.choices?.[0]?.message?.content;
  if (typeof content !== 'string' || content.length === 0) return `no choices[0].message.content: ${snippet(bodyText)}`;
  const total = completion.usage?.total_tokens;
  if (typeof total !== 'number' || !(total > 0)) return `usage.total_tokens is not above 0: ${snippet(bodyText)}`;
  return undefined;
}

/**
 * Follows one chat-completion SSE stream as its bytes arrive. `push` returns true for the chunk that
 * carried the first non-empty content delta, which is when time to first token is taken.
 */
export class StreamCheck {
  private readonly decoder = new TextDecoder('utf-8');
  private partialLine = '';
  private contentDeltas = 0;
  private sawUsage = false;
  private sawDone = false;
  private problem: string | undefined;

  push(chunk: Uint8Array): boolean {
    const before = this.contentDeltas;
    this.feed(this.decoder.decode(chunk, { stream: true }));
    return before === 0 && this.contentDeltas > 0;
  }

  /** Why the finished stream is not a valid one, or undefined when it is. */
  finish(): string | undefined {
    this.feed(`${this.decoder.decode()}\n`);
    if (this.problem !== undefined) return this.problem;
    if (!this.sawDone) return 'stream ended without data: [DONE]';
    if (this.contentDeltas === 0) return 'stream had no content delta';
    if (!this.sawUsage) return 'stream had no usage chunk with total_tokens > 0';
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
    // Blank lines, comments and `event:`/`id:` fields carry nothing this check needs.
    if (!line.startsWith('data:') || this.problem !== undefined) return;
    const data = line.slice(line.charAt(5) === ' ' ? 6 : 5);
    if (this.sawDone) {
      this.problem = `data after [DONE]: ${snippet(data)}`;
      return;
    }
    if (data === '[DONE]') {
      this.sawDone = true;
      return;
    }
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      this.problem = `stream data is not JSON: ${snippet(data)}`;
      return;
    }
    const parsed = chunk as {
      error?: unknown;
      choices?: { delta?: { content?: unknown } }[];
      usage?: { total_tokens?: unknown } | null;
    };
    if (parsed.error !== undefined) {
      this.problem = `error event in stream: ${snippet(data)}`;
      return;
    }
    const content = parsed.choices?.[0]?.delta?.content;
    if (typeof content === 'string' && content.length > 0) this.contentDeltas++;
    const total = parsed.usage?.total_tokens;
    if (typeof total === 'number' && total > 0) this.sawUsage = true;
  }
}

export function snippet(text: string, length = 160): string {
  const flat = text.replaceAll(/\s+/g, ' ').trim();
  return flat.length > length ? `${flat.slice(0, length)}…` : flat;
}
