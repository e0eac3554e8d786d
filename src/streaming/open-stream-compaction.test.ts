import { afterEach, describe, expect, it, vi } from 'vitest';
import { COMPACTION_GROUP_SIZE, COMPACTION_INTERVAL_MS, compactWhileOpen } from './open-stream-compaction.js';

describe('compactWhileOpen', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('compacts each open stream once an interval, and stops with the last of them', () => {
    vi.useFakeTimers();
    const compacted: string[] = [];
    const stopA = compactWhileOpen({ compact: () => compacted.push('a') });
    const stopB = compactWhileOpen({ compact: () => compacted.push('b') });
    vi.advanceTimersByTime(COMPACTION_INTERVAL_MS - 1);
    expect(compacted).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(compacted).toEqual(['a', 'b']);
    stopA();
    vi.advanceTimersByTime(COMPACTION_INTERVAL_MS);
    expect(compacted).toEqual(['a', 'b', 'b']);
    stopB();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('compacts many streams a group per event-loop turn, skipping those over meanwhile', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const streams = 2 * COMPACTION_GROUP_SIZE + 5;
    const perTurn: number[] = [];
    let inTurn = 0;
    const stops = Array.from({ length: streams }, () =>
      compactWhileOpen({
        compact: () => {
          // The first stream of a turn schedules the count of that turn's streams, read once the turn is over.
          if (inTurn++ > 0) return;
          queueMicrotask(() => {
            perTurn.push(inTurn);
            inTurn = 0;
          });
        },
      }),
    );
    stops[streams - 1]!();
    vi.advanceTimersByTime(COMPACTION_INTERVAL_MS);
    for (let turn = 0; turn < 4; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(perTurn).toEqual([COMPACTION_GROUP_SIZE, COMPACTION_GROUP_SIZE, 4]);
    for (const stop of stops) stop();
  });
});
