/**
 * What the bench's own servers (the mock upstream, the floor proxy) share: listening with no request timeouts,
 * and, run as a child process, reading their options, printing their address as one JSON line and closing on
 * SIGTERM/SIGINT.
 */
import type { Server } from 'node:http';

export interface BenchServer {
  /** `http://host:port`. */
  origin: string;
  close: () => Promise<void>;
}

/** Listens on `port` (0: any free port); `close` ends open connections, then runs `onClose` (a pool, say). */
export async function listenForBench(
  server: Server,
  port: number,
  host: string,
  name: string,
  onClose: () => Promise<void> = async () => {},
): Promise<BenchServer> {
  // The bench keeps its connections open across rounds; never time them out mid-run.
  server.headersTimeout = 0;
  server.requestTimeout = 0;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error(`The ${name} has no TCP address.`);
  return {
    origin: `http://${host}:${address.port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await onClose();
    },
  };
}

/** The value after `name` on the command line (`--port 8080`), or undefined when the option is absent. */
export function commandLineOption(name: string): string | undefined {
  const index = process.argv.indexOf(name);
  return index === -1 ? undefined : process.argv[index + 1];
}

/** As a child process: the address line the bench waits for (`listeningUrl`), and a clean exit on a signal. */
export function serveUntilSignalled(started: BenchServer): void {
  process.stdout.write(`${JSON.stringify({ url: started.origin })}\n`);
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      void started.close().then(() => process.exit(0));
    });
  }
}
