import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { LOG_REDACTIONS } from '../app.js';
import { lazyChildLogger } from './request-logger.js';

function capture(level: string) {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  return { logger: pino({ level, redact: LOG_REDACTIONS }, stream), lines };
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
