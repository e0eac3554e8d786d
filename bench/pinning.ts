/**
 * CPU placement: the gateway alone on core 0, the mock upstream and the bench (load generator) on core 1,
 * so the gateway's figures are not its neighbours' and the neighbours do not queue behind it. Uses
 * `taskset`; without it, or with fewer than two CPUs, everything runs unpinned and the report says so.
 */
import { execFileSync } from 'node:child_process';
import { availableParallelism } from 'node:os';

export interface Pinning {
  /** Core for the gateway, or null when unpinned. */
  gatewayCore: number | null;
  /** Core for the mock upstream and the bench process, or null when unpinned. */
  loadCore: number | null;
  /** One line for the report: what was pinned where, or why nothing was. */
  description: string;
}

const GATEWAY_CORE = 0;
const LOAD_CORE = 1;

/** Decides the placement and moves the bench process itself (every thread, `taskset -a`) onto the load core. */
export function pinBenchProcess(wanted: boolean): Pinning {
  const unpinned = (why: string): Pinning => ({ gatewayCore: null, loadCore: null, description: `not pinned: ${why}` });
  if (!wanted) return unpinned('--no-pin');
  if (availableParallelism() < 2) return unpinned(`${availableParallelism()} CPU available, 2 needed`);
  try {
    execFileSync('taskset', ['-a', '-cp', String(LOAD_CORE), String(process.pid)], { stdio: 'ignore' });
  } catch (error) {
    return unpinned(
      `taskset failed or is missing (${error instanceof Error ? error.message.split('\n')[0] : String(error)})`,
    );
  }
  return {
    gatewayCore: GATEWAY_CORE,
    loadCore: LOAD_CORE,
    description: `gateway on core ${GATEWAY_CORE}; mock upstream and load generator on core ${LOAD_CORE} (taskset)`,
  };
}
