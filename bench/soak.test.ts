import { describe, expect, it } from 'vitest';
import { parseBenchOptions } from './options.js';
import { gauge, heapUsedSlope, rssSlope, sampleIntervalMs, slope, soakClients, type SoakSample } from './soak.js';

const sample = (atS: number, rssMb: number, heapMb: number | null): SoakSample => ({
  atS,
  rssKiB: (rssMb * 1e6) / 1024,
  heapUsedBytes: heapMb === null ? null : heapMb * 1e6,
  heapTotalBytes: null,
  externalBytes: null,
  requests: 0,
});

describe('the soak mode', () => {
  it('fits a least-squares slope in MB per minute', () => {
    const points = [0, 60, 120, 180].map((atS) => ({ atS, bytes: 100e6 + (atS * 1e6) / 60 }));
    const fitted = slope(points);
    expect(fitted?.mbPerMinute).toBeCloseTo(1, 9);
    expect(fitted?.meanMb).toBeCloseTo(101.5, 9);
    expect(slope(points.slice(0, 2))).toBeNull();
    expect(
      slope([
        { atS: 5, bytes: 1 },
        { atS: 5, bytes: 2 },
        { atS: 5, bytes: 3 },
      ]),
    ).toBeNull();
  });

  it('fits over the samples after the first quarter, so start-up growth is not read as a leak', () => {
    // Grows fast for the first quarter, then flat: a plateau, not a leak.
    const samples = [
      sample(10, 100, 40),
      sample(20, 150, 60),
      sample(30, 200, 80),
      ...[40, 60, 80, 100, 120].map((atS) => sample(atS, 200, atS % 40 === 0 ? 90 : 70)),
    ];
    expect(rssSlope(samples, 120)?.mbPerMinute).toBeCloseTo(0, 9);
    expect(rssSlope(samples, 120)?.samples).toBe(6);
    expect(Math.abs(heapUsedSlope(samples, 120)?.mbPerMinute ?? 1)).toBeLessThan(10);
    // Samples without a heap reading are left out of the heap's fit, not read as zero.
    expect(heapUsedSlope([sample(40, 1, null), sample(50, 1, null), sample(60, 1, null)], 120)).toBeNull();
  });

  it('splits 64 clients over the mix: three streams to one JSON request', () => {
    const clients = soakClients();
    expect(clients.reduce((sum, entry) => sum + entry.clients, 0)).toBe(64);
    expect(clients.filter((entry) => entry.shape.stream).reduce((sum, entry) => sum + entry.clients, 0)).toBe(48);
    expect(soakClients(6).map((entry) => entry.clients)).toEqual([2, 2, 1, 1]);
  });

  it('samples about 120 times a run, at most once a second', () => {
    expect(sampleIntervalMs(600)).toBe(5_000);
    expect(sampleIntervalMs(30)).toBe(1_000);
  });

  it('reads a gauge of a Prometheus page', () => {
    const page =
      '# HELP nodejs_heap_size_used_bytes x\nnodejs_heap_size_used_bytes 52428800\nnodejs_heap_space_size_used_bytes{space="new"} 1\n';
    expect(gauge(page, 'nodejs_heap_size_used_bytes')).toBe(52428800);
    expect(gauge(page, 'nodejs_external_memory_bytes')).toBeNull();
  });

  it('takes --soak SECONDS', () => {
    expect(parseBenchOptions(['--soak', '600'])?.soakSeconds).toBe(600);
    expect(parseBenchOptions([])?.soakSeconds).toBeUndefined();
    expect(() => parseBenchOptions(['--soak', '5'])).toThrow(/--soak/);
  });
});
