import { describe, expect, it } from 'vitest';
import { formatHeapSizingSaving } from './heap-probe.js';

describe('the old-space sizing figure', () => {
  it('is a ratio of the medians, below 1 when the sizing saves memory', () => {
    expect(formatHeapSizingSaving({ pairs: 5, tunedRssMb: 90, defaultRssMb: 100, ratio: 0.9 })).toBe(
      "old-space sizing (src/startup-heap.ts), churn probe, median of 5: RSS 90.0 MB against 100.0 MB with V8's own growth: 0.900x",
    );
  });
});
