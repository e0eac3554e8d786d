/** The JSON payloads of a server-sent event stream's `data:` lines, in order, without OpenAI's `[DONE]`. */
export function sseData(text: string): unknown[] {
  return text
    .split('\n\n')
    .map((frame) =>
      frame
        .split('\n')
        .find((line) => line.startsWith('data: '))
        ?.slice('data: '.length),
    )
    .filter((data): data is string => data !== undefined && data !== '[DONE]')
    .map((data) => JSON.parse(data) as unknown);
}
