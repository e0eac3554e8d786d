import { describe, expect, it } from 'vitest';
import { describeNoise, machineNoise, parseProcStat, sampleCpu, type CpuSample } from './machine-noise.js';
import { clockTicksPerSecond } from './processes.js';

describe('machine noise', () => {
  it('reads the cpu line of /proc/stat, leaving guest time out (it is inside user)', () => {
    const text = 'cpu  100 5 30 800 10 2 8 4 50 0\ncpu0 50 2 15 400 5 1 4 2 25 0\nintr 12345\n';
    expect(parseProcStat(text)).toEqual({ processes: 135, interrupts: 10, steal: 4, total: 959 });
  });

  it('splits the machine into the bench, the databases, interrupts, other processes and steal, in cores', () => {
    const from: CpuSample = {
      machine: { processes: 1_000, interrupts: 100, steal: 10, total: 10_000 },
      bench: 600,
      databases: 50,
    };
    // 10 s on 2 cores at 100 ticks/s: 2,000 ticks in all.
    const to: CpuSample = {
      machine: { processes: 2_300, interrupts: 200, steal: 30, total: 12_000 },
      bench: 1_500,
      databases: 250,
    };
    const noise = machineNoise(from, to, 100, 2);
    expect(noise.seconds).toBe(10);
    expect(noise.benchCores).toBeCloseTo(0.9);
    expect(noise.databaseCores).toBeCloseTo(0.2);
    expect(noise.interruptCores).toBeCloseTo(0.1);
    expect(noise.otherCores).toBeCloseTo(0.2);
    expect(noise.stealCores).toBeCloseTo(0.02);
    expect(describeNoise(noise)).toContain('other processes 0.20 cores (the noise)');
  });

  it('counts the CPU this process burns as the bench’s, not as noise', () => {
    const from = sampleCpu([process.pid]);
    const start = process.cpuUsage();
    let spin = 0;
    while (process.cpuUsage(start).user < 300_000) spin += Math.sqrt(spin + 1);
    const to = sampleCpu([process.pid]);
    expect(spin).toBeGreaterThan(0);
    // 300 ms of CPU; /proc counts whole ticks.
    expect(to.bench - from.bench).toBeGreaterThanOrEqual(Math.floor(0.25 * clockTicksPerSecond()));
    expect(to.machine.processes - from.machine.processes).toBeGreaterThanOrEqual(to.bench - from.bench - 2);
  });
});
