import { describe, expect, it } from 'vitest';
import { parseBenchOptions } from './options.js';
import { coresBetween, formatScaleOut, isBackendOf } from './scale-out.js';

describe('the database’s backend processes', () => {
  it('are those whose command line names the bench’s database, not another user’s or the server’s own', () => {
    expect(isBackendOf('postgres: postgres tollgate_bench_ab 127.0.0.1(5432) idle\0', 'tollgate_bench_ab')).toBe(true);
    expect(isBackendOf('postgres: postgres test 127.0.0.1(5432) idle\0', 'tollgate_bench_ab')).toBe(false);
    expect(isBackendOf('postgres: 15/main: postgres tollgate_bench_ab 127.0.0.1(5432) idle', 'tollgate_bench_ab')).toBe(
      true,
    );
    expect(isBackendOf('postgres: checkpointer \0', 'tollgate_bench_ab')).toBe(false);
    expect(isBackendOf('postgres: 15/main: checkpointer \0', 'tollgate_bench_ab')).toBe(false);
    expect(isBackendOf('/usr/lib/postgresql/15/bin/postgres\0-D\0/var/lib/pg', 'tollgate_bench_ab')).toBe(false);
  });
});

describe('where the CPU went', () => {
  it('turns ticks into cores over the window and the database’s share of the busy machine', () => {
    const from = { gateways: 0, database: 0, redis: 0, machineBusy: 0, machineTotal: 0 };
    // 2 cores for 10 s at 100 ticks a second: 2,000 ticks in all.
    const to = { gateways: 800, database: 300, redis: 100, machineBusy: 1500, machineTotal: 2000 };
    const cores = coresBetween(from, to, 2);
    expect(cores.gatewayCores).toBeCloseTo(0.8, 6);
    expect(cores.databaseCores).toBeCloseTo(0.3, 6);
    expect(cores.redisCores).toBeCloseTo(0.1, 6);
    expect(cores.machineBusyCores).toBeCloseTo(1.5, 6);
    expect(cores.databaseShare).toBeCloseTo(0.2, 6);
  });

  it('prints one row per instance count', () => {
    const row = {
      seconds: 6,
      requests: 6000,
      failures: 0,
      failureMessages: [],
      requestsPerSecond: 1000,
      gatewayCores: 1,
      databaseCores: 0.4,
      redisCores: 0.1,
      machineBusyCores: 1.9,
      databaseShare: 0.21,
    };
    const text = formatScaleOut({
      startedAt: '',
      finishedAt: '',
      options: { instances: [1, 2], seconds: 6, concurrency: 72, accounts: 12 },
      environment: { node: 'v24', cpuModel: 'x', cpuCount: 2, loadAverageAtStart: 0 },
      results: [
        { ...row, instances: 1 },
        { ...row, instances: 2, requestsPerSecond: 1500 },
      ],
    });
    expect(text).toMatch(/\n\s+1\s+1000\s+1\.00\s+0\.40\s+0\.10\s+1\.90\s+21%/);
    expect(text).toMatch(/\n\s+2\s+1500\s/);
  });
});

describe('the --instances option', () => {
  it('takes distinct counts from 1 to 16', () => {
    expect(parseBenchOptions(['--instances', '1,2,3'])?.instances).toEqual([1, 2, 3]);
    expect(parseBenchOptions([])?.instances).toBeUndefined();
    expect(() => parseBenchOptions(['--instances', '1,1'])).toThrow(/twice/);
    expect(() => parseBenchOptions(['--instances', '0'])).toThrow(/from 1 to 16/);
    expect(() => parseBenchOptions(['--instances', 'two'])).toThrow(/from 1 to 16/);
  });
});
