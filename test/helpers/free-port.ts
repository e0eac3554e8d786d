import { createServer } from 'node:net';

/**
 * A loopback port nothing listens on: bound by this process and released just now (the kernel hands out
 * ephemeral ports in turn, so it is not given again at once). Never a fixed number: on a shared machine
 * something may listen on any port a test assumes free (the suite's old "dead Redis" 6390 was one).
 */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A Redis URL nobody answers on (see `freePort`). */
export async function deadRedisUrl(): Promise<string> {
  return `redis://127.0.0.1:${await freePort()}`;
}
