/**
 * What else ran on the machine while the bench measured. The whole machine's CPU comes from /proc/stat; the
 * bench's own processes (this one with its load generator, the mock, the gateway, the floor proxy) and the
 * database servers the gateway talks to (PostgreSQL, Redis: part of what is measured) are taken out by their
 * /proc/PID/stat times. What is left is other work, the noise behind every figure of the run. Steal is time the
 * hypervisor gave to other guests while this one wanted to run: noise too, and invisible to load averages.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { cpuTicks } from './processes.js';

/** Machine-wide CPU ticks (all cores) from the `cpu` line of /proc/stat. */
export interface MachineTicks {
  /** user + nice + system: processes, kernel work on their behalf. */
  processes: number;
  /** irq + softirq: on this bench mostly the loopback traffic itself. */
  interrupts: number;
  steal: number;
  /** Every column but guest time (already inside user). */
  total: number;
}

export interface CpuSample {
  machine: MachineTicks;
  /** utime + stime of the bench's own processes. */
  bench: number;
  /** utime + stime of every postgres and redis-server process, with the children each has reaped. */
  databases: number;
}

/** CPU use between two samples, in cores (1.0 = one core busy the whole time). */
export interface MachineNoise {
  seconds: number;
  cores: number;
  benchCores: number;
  databaseCores: number;
  interruptCores: number;
  /** Processes other than the bench's and the database servers: the noise. */
  otherCores: number;
  stealCores: number;
}

const DATABASE_COMMANDS = /^(postgres|redis-server)$/;

export function parseProcStat(text: string): MachineTicks {
  const line = text.split('\n').find((candidate) => candidate.startsWith('cpu '));
  if (line === undefined) throw new Error('/proc/stat has no cpu line.');
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = line
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  return {
    processes: user + nice + system,
    interrupts: irq + softirq,
    steal,
    total: user + nice + system + idle + iowait + irq + softirq + steal,
  };
}

/** Ticks of a process that may have exited since it was listed: 0 then. */
function ticksOf(pid: number, reapedChildren = false): number {
  try {
    return cpuTicks(pid, reapedChildren);
  } catch {
    return 0;
  }
}

function databaseTicks(): number {
  let sum = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let command: string;
    try {
      command = readFileSync(`/proc/${entry}/comm`, 'utf8').trim();
    } catch {
      continue;
    }
    // With the children each has reaped: PostgreSQL's autovacuum workers come and go between two samples.
    if (DATABASE_COMMANDS.test(command)) sum += ticksOf(Number(entry), true);
  }
  return sum;
}

/** The machine's ticks and those of `benchPids` and the database servers, now. */
export function sampleCpu(benchPids: readonly number[]): CpuSample {
  return {
    machine: parseProcStat(readFileSync('/proc/stat', 'utf8')),
    bench: benchPids.reduce((sum, pid) => sum + ticksOf(pid), 0),
    databases: databaseTicks(),
  };
}

export function machineNoise(from: CpuSample, to: CpuSample, ticksPerSecond: number, coreCount: number): MachineNoise {
  const total = to.machine.total - from.machine.total;
  // /proc/stat counts every core: its total over the core count is the wall time, in ticks.
  const wallTicks = total / coreCount;
  const cores = (ticks: number): number => (wallTicks > 0 ? Math.max(0, ticks) / wallTicks : 0);
  const bench = to.bench - from.bench;
  const databases = to.databases - from.databases;
  return {
    seconds: wallTicks / ticksPerSecond,
    cores: coreCount,
    benchCores: cores(bench),
    databaseCores: cores(databases),
    interruptCores: cores(to.machine.interrupts - from.machine.interrupts),
    otherCores: cores(to.machine.processes - from.machine.processes - bench - databases),
    stealCores: cores(to.machine.steal - from.machine.steal),
  };
}

export function describeNoise(noise: MachineNoise): string {
  const share = (value: number): string => `${value.toFixed(2)} cores`;
  return (
    `machine during the measured rounds (${noise.seconds.toFixed(0)} s, ${noise.cores} cores): bench processes ${share(noise.benchCores)}, ` +
    `database servers ${share(noise.databaseCores)}, interrupts ${share(noise.interruptCores)}, ` +
    `other processes ${share(noise.otherCores)} (the noise), steal ${share(noise.stealCores)}`
  );
}
