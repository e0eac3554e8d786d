import { describe, expect, it } from 'vitest';
import type { ScenarioSummary } from './measurements.js';
import { perChunkCosts } from './per-chunk.js';

/** Only the fields perChunkCosts reads; the rest of a summary does not take part. */
function summary(
  id: string,
  route: string,
  chunks: number,
  gatewayMs: number,
  floorMs: number | null,
  concurrency = 1,
  writes: ScenarioSummary['writes'] = 'per-event',
): ScenarioSummary {
  return {
    id,
    route,
    chunks,
    writes,
    promptKiB: 0,
    stream: true,
    paceMs: 0,
    concurrency,
    gateway: { proxyCpuMsPerRequest: gatewayMs },
    floor: floorMs === null ? null : { proxyCpuMsPerRequest: floorMs },
  } as unknown as ScenarioSummary;
}

describe('perChunkCosts', () => {
  it('measures a long stream against the short one the mock wrote the same way, not the coalesced figure', () => {
    const rows = perChunkCosts([
      summary('s20-coalesced', 'same-format', 20, 0.2, null, 1, 'coalesced'),
      summary('s20', 'same-format', 20, 0.5, null),
      summary('s500', 'same-format', 500, 2.42, null),
    ]);
    expect(rows.map((row) => row.baseId)).toEqual(['s20']);
  });

  it('divides the extra CPU of a long stream by its extra chunks, for the gateway and the floor', () => {
    const rows = perChunkCosts([
      summary('s20', 'same-format', 20, 0.5, 0.2),
      summary('s500', 'same-format', 500, 2.42, 0.344),
    ]);
    expect(rows).toHaveLength(1);
    expect(rows[0]?.baseId).toBe('s20');
    expect(rows[0]?.gatewayMicrosPerChunk).toBeCloseTo(4, 6);
    expect(rows[0]?.floorMicrosPerChunk).toBeCloseTo(0.3, 6);
    expect(rows[0]?.gatewayStreamMs).toBe(2.42);
  });

  it('pairs each long stream with the short one of its own route and leaves the floor out where it was not measured', () => {
    const rows = perChunkCosts([
      summary('a20', 'same-format', 20, 0.5, 0.2),
      summary('t20', 'openai-to-anthropic', 20, 1, null),
      summary('t500', 'openai-to-anthropic', 500, 5.8, null),
      summary('t2000', 'openai-to-anthropic', 2000, 20.8, null),
    ]);
    expect(rows.map((row) => [row.id, row.baseId, row.floorMicrosPerChunk])).toEqual([
      ['t500', 't20', null],
      ['t2000', 't20', null],
    ]);
    expect(rows[1]?.gatewayMicrosPerChunk).toBeCloseTo(10, 6);
  });

  it('gives nothing without the 20-chunk partner at concurrency 1', () => {
    expect(
      perChunkCosts([summary('s20', 'same-format', 20, 0.5, 0.2, 64), summary('s500', 'same-format', 500, 2.4, 0.3)]),
    ).toEqual([]);
  });
});
