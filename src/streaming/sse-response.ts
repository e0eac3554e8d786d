import type { ServerResponse } from 'node:http';

/**
 * Writes SSE text to the client, honouring backpressure: a slow reader pauses us instead of growing memory.
 * Resolves false when the client has gone (the caller stops and settles).
 */
export function writeToClient(response: ServerResponse, text: string): boolean | Promise<boolean> {
  if (response.destroyed || response.writableEnded) return false;
  if (text === '' || response.write(text)) return true;
  return new Promise((resolve) => {
    const finish = (open: boolean) => () => {
      response.off('drain', onDrain);
      response.off('close', onClose);
      resolve(open);
    };
    const onDrain = finish(true);
    const onClose = finish(false);
    response.on('drain', onDrain);
    response.on('close', onClose);
  });
}

export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  // Tell nginx-style proxies not to buffer the stream.
  'x-accel-buffering': 'no',
} as const;
