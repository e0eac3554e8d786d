import { describe, expect, it } from 'vitest';
import { floorNote, floorRatio, judgeTargets, type BackendRun } from './targets.js';

const ms = (value: number): string => `${value.toFixed(3)} ms`;

describe('the floor beside a target', () => {
  it('states the gateway as a multiple of the floor', () => {
    expect(floorRatio(0.39, 0.06)).toBe('6.5x');
    expect(floorNote(0.39, 0.06, ms)).toBe('floor 0.060 ms, 6.5x');
  });

  it('gives the floor without a multiple when either figure is not above zero', () => {
    expect(floorRatio(0.2, 0)).toBeUndefined();
    expect(floorRatio(-0.01, 0.3)).toBeUndefined();
    expect(floorNote(0.2, -0.01, ms)).toBe('floor -0.010 ms');
    expect(floorNote(0.2, Number.NaN, ms)).toBeUndefined();
  });

  it('says nothing when the floor was not measured', () => {
    expect(floorNote(0.2, undefined, ms)).toBeUndefined();
    expect(floorRatio(undefined, 0.1)).toBeUndefined();
  });
});

describe('peak RSS at concurrency 128', () => {
  const run = (backend: BackendRun['backend'], peakRssKiB: number, floorPeakRssKiB: number | null) =>
    ({
      backend,
      scenarios: [],
      peakRssKiB,
      peakRssScope: 'concurrency-128 scenario',
      floorPeakRssKiB,
      idleRssKiB: 80_000,
      startRssKiB: 80_000,
      idleAfterLoadRssKiB: null,
      roundTrips: null,
    }) as unknown as BackendRun;
  const peakRow = (runs: BackendRun[]) => judgeTargets(runs).find((row) => row.target.startsWith('peak RSS'))!;

  it('is judged as a multiple of the floor proxy peak, the first backend floor serving the others', () => {
    const row = peakRow([run('sqlite', 300_000, 250_000), run('postgres', 400_000, null)]);
    expect(row.limit).toBe('<= 1.3x');
    expect(row.values.sqlite).toEqual({ text: '307.2 MB (floor 256.0 MB, 1.20x)', pass: true });
    expect(row.values.postgres).toEqual({ text: '409.6 MB (floor 256.0 MB, 1.60x)', pass: false });
  });

  it('is shown, not judged, when no floor ran in that scenario', () => {
    expect(peakRow([run('sqlite', 300_000, null)]).values.sqlite).toEqual({ text: '307.2 MB', pass: null });
  });
});

describe('PostgreSQL round trips per sequential request', () => {
  const run = (postgresPerRequest: number, postgresCountedPerRequest: number) =>
    ({
      backend: 'postgres',
      scenarios: [],
      peakRssKiB: null,
      floorPeakRssKiB: null,
      idleRssKiB: 80_000,
      startRssKiB: 80_000,
      idleAfterLoadRssKiB: null,
      roundTrips: {
        kinds: [
          {
            kind: 'same-format-json',
            requests: 400,
            postgresPerRequest,
            postgresCountedPerRequest,
            redisPerRequest: 1,
            postgresStatements: [],
          },
        ],
        idlePostgresPerSecond: 0.7,
        idleRedisPerSecond: 0,
      },
    }) as unknown as BackendRun;
  const row = (each: BackendRun) =>
    judgeTargets([each]).find((target) => target.target.startsWith('PostgreSQL round trips'))!.values.postgres;

  it('are judged without the background, to the hundredth', () => {
    expect(row(run(3.0004, 3.0024))).toEqual({ text: '3.00 (3.002 with the background)', pass: true });
    expect(row(run(2.9996, 3.0))).toEqual({ text: '3.00 (3.000 with the background)', pass: true });
  });

  it('fail when one request in a hundred makes a fourth', () => {
    expect(row(run(3.01, 3.012))).toEqual({ text: '3.01 (3.012 with the background)', pass: false });
  });
});
