/**
 * A TCP relay that counts round trips: on each connection, every time the client speaks after the server
 * has (or first), that is one round trip. It needs no help from the server (pg_stat_statements is not
 * loaded on every PostgreSQL, and Redis counts commands run inside scripts as its own) and no counting
 * hook in the gateway: what crosses the wire is what costs latency. Pipelined messages sent before any
 * answer count once, as they should.
 *
 * Only the round-trip phase goes through it: the relay adds a hop, so latency and CPU are measured with
 * the gateway connected straight to the servers.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

/** Names what one round trip asked for, from the client's first bytes of it; e.g. the SQL of a PostgreSQL message. */
export type Describe = (firstBytes: Buffer) => string;

export class RoundTripProxy {
  private roundTrips = 0;
  private readonly sockets = new Set<Socket>();
  private recording: string[] | undefined;
  private describe: Describe | undefined;

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(targetHost: string, targetPort: number): Promise<RoundTripProxy> {
    let proxy: RoundTripProxy | undefined;
    const server = createServer((client) => proxy?.relay(client, targetHost, targetPort));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('The round-trip proxy has no TCP address.');
    proxy = new RoundTripProxy(server, address.port);
    return proxy;
  }

  /** From now on, keeps a description of every round trip (for one request's worth: they are not bounded). */
  record(describe: Describe): void {
    this.describe = describe;
    this.recording = [];
  }

  /** The descriptions kept since `record`, and stops keeping them. */
  takeRecording(): string[] {
    const kept = this.recording ?? [];
    this.recording = undefined;
    return kept;
  }

  /** Round trips counted so far, over every connection. */
  get count(): number {
    return this.roundTrips;
  }

  private relay(client: Socket, host: string, port: number): void {
    const upstream = connect(port, host);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    this.sockets.add(client).add(upstream);
    let clientSpoke = false;
    client.on('data', (data) => {
      if (!clientSpoke) {
        this.roundTrips++;
        if (this.recording !== undefined && this.describe !== undefined) this.recording.push(this.describe(data));
      }
      clientSpoke = true;
      upstream.write(data);
    });
    upstream.on('data', (data) => {
      clientSpoke = false;
      client.write(data);
    });
    const end = (): void => {
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    for (const socket of [client, upstream]) {
      socket.on('error', end);
      socket.on('close', end);
    }
  }

  close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * The SQL a PostgreSQL frontend message batch starts with: a simple Query ('Q') or the Parse ('P') of the
 * extended protocol; for a Bind ('B') of a statement prepared earlier, its name; otherwise the message type.
 * Enough to see which statements a request runs.
 */
export function describePostgresMessage(bytes: Buffer): string {
  const type = String.fromCharCode(bytes[0] ?? 0);
  if (type === 'B') {
    // Bind: the portal name, then the prepared statement's name.
    const portalEnd = bytes.indexOf(0, 5);
    const nameEnd = portalEnd === -1 ? -1 : bytes.indexOf(0, portalEnd + 1);
    const name = nameEnd === -1 ? '' : bytes.toString('utf8', portalEnd + 1, nameEnd);
    return name === '' ? 'bind (unnamed statement)' : `bind prepared statement ${name}`;
  }
  if (type !== 'Q' && type !== 'P') return `message '${type}'`;
  let start = 5;
  // Parse starts with the statement name, then the SQL; Query is the SQL alone.
  if (type === 'P') start = bytes.indexOf(0, start) + 1;
  const end = bytes.indexOf(0, start);
  const sql = bytes
    .toString('utf8', start, end === -1 ? bytes.length : end)
    .replaceAll(/\s+/g, ' ')
    .trim();
  return sql.length > 160 ? `${sql.slice(0, 160)}…` : sql;
}
