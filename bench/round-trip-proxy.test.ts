import { createServer, connect, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { describePostgresMessage, RoundTripProxy } from './round-trip-proxy.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** A server that answers every read with "ok": one reply per batch of client bytes. */
async function answeringServer(): Promise<number> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('data', () => socket.write('ok'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => {
    for (const socket of sockets) socket.destroy();
    return new Promise((resolve) => server.close(() => resolve()));
  });
  return (server.address() as { port: number }).port;
}

function nextData(socket: Socket): Promise<Buffer> {
  return new Promise((resolve) => socket.once('data', resolve));
}

describe('RoundTripProxy', () => {
  it('counts each exchange once, however the client splits its message', async () => {
    const proxy = await RoundTripProxy.start('127.0.0.1', await answeringServer());
    closers.push(() => proxy.close());
    const client = connect(proxy.port, '127.0.0.1');
    closers.push(async () => void client.destroy());
    await new Promise((resolve) => client.once('connect', resolve));
    for (let i = 0; i < 3; i++) {
      const answer = nextData(client);
      client.write(`request ${i}`);
      expect((await answer).toString()).toContain('ok');
    }
    expect(proxy.count).toBe(3);
  });

  it('records what each round trip asked for while recording', async () => {
    const proxy = await RoundTripProxy.start('127.0.0.1', await answeringServer());
    closers.push(() => proxy.close());
    const client = connect(proxy.port, '127.0.0.1');
    closers.push(async () => void client.destroy());
    await new Promise((resolve) => client.once('connect', resolve));
    proxy.record((bytes) => bytes.toString());
    const answer = nextData(client);
    client.write('first');
    await answer;
    expect(proxy.takeRecording()).toEqual(['first']);
  });
});

describe('describePostgresMessage', () => {
  const message = (type: string, ...parts: string[]) => {
    const body = Buffer.concat(parts.map((part) => Buffer.from(`${part}\0`)));
    const header = Buffer.alloc(5);
    header.write(type, 0);
    header.writeInt32BE(body.length + 4, 1);
    return Buffer.concat([header, body]);
  };

  it('reads the SQL of a simple query and of a Parse', () => {
    expect(describePostgresMessage(message('Q', 'begin'))).toBe('begin');
    expect(describePostgresMessage(message('P', '', 'select  1\n from t'))).toBe('select 1 from t');
  });

  it('names the prepared statement a Bind runs', () => {
    expect(describePostgresMessage(message('B', '', 'tollgate_settle'))).toBe(
      'bind prepared statement tollgate_settle',
    );
    expect(describePostgresMessage(message('B', '', ''))).toBe('bind (unnamed statement)');
  });

  it('names other messages by type', () => {
    expect(describePostgresMessage(message('S'))).toBe("message 'S'");
  });
});
