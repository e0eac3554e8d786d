import { describe, expect, it } from 'vitest';
import { REPLY_CHUNKS } from './mock-reply.js';
import { PACE_MS, SCENARIOS, SHAPE_SCENARIOS } from './scenarios.js';

describe('how the load arrives', () => {
  it('spreads the 64 paced streams evenly over one reply, and keeps a burst of 64 beside them', () => {
    const steady = SHAPE_SCENARIOS.find((each) => each.id === 'same-format-paced-c64');
    const burst = SHAPE_SCENARIOS.find((each) => each.id === 'same-format-paced-c64-burst');
    expect(steady).toMatchObject({
      concurrency: 64,
      paceMs: PACE_MS,
      floor: true,
      startSpreadMs: REPLY_CHUNKS * PACE_MS,
    });
    expect(burst).toMatchObject({ concurrency: 64, paceMs: PACE_MS, floor: true, startSpreadMs: 0 });
  });

  it('starts unpaced scenarios together: they measure throughput', () => {
    for (const each of [...SCENARIOS, ...SHAPE_SCENARIOS].filter((scenario) => scenario.paceMs === 0))
      expect(each.startSpreadMs).toBe(0);
  });

  it('gives every scenario its own id', () => {
    const ids = [...SCENARIOS, ...SHAPE_SCENARIOS].map((each) => each.id);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
