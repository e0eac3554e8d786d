import { describe, expect, it } from 'vitest';
import { OutageLog } from './outage-log.js';

describe('OutageLog', () => {
  it('announces an outage once, then counts per interval, then says when an interval passed without failures', async () => {
    const lines: Array<{ level: string; fields: Record<string, unknown>; message: string }> = [];
    const logger = {
      warn: (fields: Record<string, unknown>, message: string) => lines.push({ level: 'warn', fields, message }),
      info: (fields: Record<string, unknown>, message: string) => lines.push({ level: 'info', fields, message }),
    };
    const log = new OutageLog(logger as never, 200);
    const cause = new Error('ECONNREFUSED');
    for (let i = 0; i < 500; i++) log.record('storage', 'requests answered 503', cause);
    log.record('storage', 'settlements journaled');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 'warn',
      fields: { dependency: 'storage', err: cause },
      message: expect.stringMatching(/^storage unavailable/),
    });
    await expect.poll(() => lines.length, { timeout: 5_000 }).toBe(2);
    expect(lines[1]).toMatchObject({
      level: 'warn',
      message: 'storage still unavailable',
      fields: { counts: { 'requests answered 503': 500, 'settlements journaled': 1 } },
    });
    await expect.poll(() => lines.length, { timeout: 5_000 }).toBe(3);
    expect(lines[2]).toMatchObject({
      level: 'info',
      fields: { totals: { 'requests answered 503': 500, 'settlements journaled': 1 } },
    });
    log.stop();
  });
});
