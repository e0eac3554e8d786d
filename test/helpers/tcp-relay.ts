/**
 * A TCP relay in front of a server (PostgreSQL) that a test can cut: `sever()` drops every connection through it
 * at once (as a network partition or a server crash does to its clients), `refuse(ms)` also stops listening for a
 * while (connection refused, as while a server restarts), then listens again on the same port. Bytes are piped
 * unchanged. Hand-written on node:net like the round-robin proxy: a few lines, and a proxy library would add
 * nothing a test needs.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface TcpRelay {
  port: number;
  /** Connections the relay accepted so far. */
  readonly accepted: number;
  /** Drops every open connection (both sides), at once. */
  sever(): void;
  /** Severs, then refuses new connections for `ms` milliseconds; resolves when it listens again. */
  refuse(ms: number): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpRelay(target: { host: string; port: number }): Promise<TcpRelay> {
  const open = new Set<Socket>();
  let accepted = 0;
  const relay = (client: Socket) => {
    accepted += 1;
    const upstream = createConnection(target);
    for (const socket of [client, upstream]) {
      open.add(socket);
      socket.on('close', () => open.delete(socket));
      // A cut is the point: errors on either side just end both.
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  };
  let server: Server = createServer(relay);
  await listen(server, 0);
  const { port } = server.address() as AddressInfo;

  const sever = () => {
    // resetAndDestroy: an RST, as a crashed peer or a partition ends a connection, not a polite FIN.
    for (const socket of [...open]) socket.resetAndDestroy();
  };
  return {
    port,
    get accepted() {
      return accepted;
    },
    sever,
    async refuse(ms) {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        sever();
      });
      await new Promise((resolve) => setTimeout(resolve, ms));
      server = createServer(relay);
      // The port was ours a moment ago; retry briefly should the kernel still hold it.
      for (let attempt = 0; ; attempt++) {
        try {
          await listen(server, port);
          return;
        } catch (error) {
          if (attempt >= 20) throw error;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
    },
    async close() {
      sever();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function listen(server: Server, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
}
