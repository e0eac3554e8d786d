/**
 * The `data:` payloads of a server-sent-event stream read with `fetch`, as they arrive. Hand-written because
 * `EventSource` cannot POST or send the CSRF header, and the gateway's streams use only single-line `data:` fields,
 * comments (keep-alives) and blank-line separators: a few lines cover them.
 */
export async function* sseData(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const reader = body.getReader();
  // `stream: true` keeps a character split across two chunks whole.
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end = buffer.indexOf('\n');
    while (end !== -1) {
      const line = buffer.slice(0, end).replace(/\r$/, '');
      buffer = buffer.slice(end + 1);
      if (line.startsWith('data:')) yield line.slice(5).trimStart();
      end = buffer.indexOf('\n');
    }
  }
}
