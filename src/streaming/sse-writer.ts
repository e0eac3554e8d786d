/**
 * Server-Sent-Events frame formatting. Payloads are already-serialised single-line JSON (JSON.stringify never
 * emits a raw line break), so no splitting into several `data:` lines is done here: these run once per
 * streamed chunk and stay plain string concatenation.
 */

/** The OpenAI-style end-of-stream sentinel. */
export const SSE_DONE = 'data: [DONE]\n\n';

/** An unnamed event (OpenAI, Gemini style). */
export function sseData(payload: string): string {
  return `data: ${payload}\n\n`;
}

/** A named event (Anthropic style: the name is repeated in the JSON `type`). */
export function sseEvent(name: string, payload: string): string {
  return `event: ${name}\ndata: ${payload}\n\n`;
}

/**
 * A comment line, which clients ignore; used as a keep-alive. The blank line after it makes proxies that
 * buffer per event pass it on at once (for a client it is an empty dispatch, which does nothing).
 */
export function sseComment(text: string): string {
  return `: ${text}\n\n`;
}
