import { afterEach, describe, expect, it, vi } from 'vitest';
import { COMPACTION_INTERVAL_MS, compactWhileOpen } from './open-stream-compaction.js';

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
});
