import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { LOG_OPTIONS } from './log-options.js';
import { lazyChildLogger } from './request-logger.js';

function capture(level: string) {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  return { logger: pino({ level, ...LOG_OPTIONS }, stream), lines };
}

describe('lazy request logger', () => {
  it('makes no pino child while nothing is written at an enabled level', () => {
    const { logger, lines } = capture('warn');
    const child = vi.spyOn(logger, 'child');
    const log = lazyChildLogger(logger, { reqId: 'req_1' }, {});
    log.info({ a: 1 }, 'not written');
    log.debug('nor this');
    expect(child).not.toHaveBeenCalled();
    expect(lines).toEqual([]);
  });

  it('writes through the same child: the request id in every line, secrets redacted', () => {
    const { logger, lines } = capture('info');
    const lazy = lazyChildLogger(logger, { reqId: 'req_2' }, {});
    const eager = logger.child({ reqId: 'req_2' }, {});
    lazy.warn({ user: { password: 'hunter2' } }, 'first');
    eager.warn({ user: { password: 'hunter2' } }, 'first');
    lazy.info('second %s', 'line');
    expect(lines).toHaveLength(3);
    const [fromLazy, fromEager] = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect({ ...fromLazy, time: 0 }).toEqual({ ...fromEager, time: 0 });
    expect(lines[0]).toContain('"reqId":"req_2"');
    expect(lines[0]).not.toContain('hunter2');
    expect(JSON.parse(lines[2]!)).toMatchObject({ reqId: 'req_2', msg: 'second line' });
  });

  it('follows a level set on it and hands out real children', () => {
    const { logger, lines } = capture('warn');
    const lazy = lazyChildLogger(logger, { reqId: 'req_3' }, {});
    expect(lazy.level).toBe('warn');
    lazy.level = 'debug';
    lazy.debug('now written');
    lazy.child({ part: 'x' }).debug('and by its child');
    expect(lines.map((line) => JSON.parse(line) as Record<string, unknown>)).toMatchObject([
      { reqId: 'req_3', msg: 'now written' },
      { reqId: 'req_3', part: 'x', msg: 'and by its child' },
    ]);
  });
});

describe('logged errors', () => {
  it("lose the parser's raw request bytes, and key-like strings in their message and stack", () => {
    const { logger, lines } = capture('info');
    const error = Object.assign(
      new Error('bad request line GET /v1beta/models?key=AIzaSyA1234567890abcdefgh HTTP/1.1'),
      {
        code: 'HPE_INVALID_METHOD',
        rawPacket: Buffer.from(
          'GET /v1beta/models?key=AIzaSyA1234567890abcdefgh HTTP/1.1\r\nauthorization: Bearer sk-tg-secretsecretsecret\r\n',
        ),
      },
    );
    logger.warn({ err: error }, 'client error');
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0]!) as { err: Record<string, unknown> };
    expect(line.err).not.toHaveProperty('rawPacket');
    expect(line.err.code).toBe('HPE_INVALID_METHOD');
    expect(lines[0]).not.toContain('AIzaSyA1234567890abcdefgh');
    expect(lines[0]).not.toContain('sk-tg-secret');
    expect(line.err.message).toContain('key=[redacted]');
  });
});
