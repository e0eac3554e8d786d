import { connect } from 'node:net';

/**
 * One raw HTTP/1.1 exchange over a socket: what fetch refuses to send (oversized or never-finished heads,
 * invalid bytes). The request goes out as latin1, so every char code 0–255 is the byte it names; the answer is
 * everything the server wrote until it closed, or an error after `timeoutMs` (a hung server).
 */
export function rawExchange(url: string, timeoutMs: number, request: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let received = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      received += chunk;
    });
    socket.on('close', () => resolve(received));
    socket.on('error', reject);
    socket.setTimeout(timeoutMs, () => socket.destroy(new Error(`no answer in ${timeoutMs} ms: the server hung`)));
    socket.write(Buffer.from(request, 'latin1'));
  });
}
