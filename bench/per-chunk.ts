/**
 * Per-chunk CPU of long streams (`--shapes`): what one more upstream chunk costs the gateway and the floor,
 * from two scenarios of the same run and route at concurrency 1, a long stream and the 20-chunk one:
 * (CPU per request of the N-chunk stream - CPU per request of the 20-chunk stream) / (N - 20). The
 * difference cancels what every request pays once (admission, settlement, connection work), so what is left
 * is the cost of the chunks themselves. Ratios to the floor are what the targets are judged on; the
 * absolute figures are only a guide on a shared machine.
 */
import type { ScenarioSummary } from './measurements.js';

export interface PerChunkCost {
  /** The long stream's scenario id. */
  id: string;
  route: string;
  chunks: number;
  /** The 20-chunk scenario it is measured against. */
  baseId: string;
  baseChunks: number;
  gatewayMicrosPerChunk: number;
  /** Null where the floor was not measured (translated routes: the floor cannot translate). */
  floorMicrosPerChunk: number | null;
  /** CPU per request of the whole long stream. */
  gatewayStreamMs: number;
  floorStreamMs: number | null;
}

function perRequestMs(summary: { proxyCpuMsPerRequest: number | null } | null): number | null {
  const value = summary?.proxyCpuMsPerRequest ?? null;
  return value === null || !Number.isFinite(value) ? null : value;
}

/** One row per long-stream scenario that has its short-stream partner in `scenarios`; none otherwise. */
export function perChunkCosts(scenarios: readonly ScenarioSummary[]): PerChunkCost[] {
  const rows: PerChunkCost[] = [];
  for (const long of scenarios) {
    if (!long.stream || long.paceMs > 0 || long.concurrency !== 1) continue;
    // The shortest stream of the route (the 20-chunk one), not a shorter long one.
    const base = scenarios
      .filter(
        (each) =>
          each.stream &&
          each.paceMs === 0 &&
          each.concurrency === 1 &&
          each.route === long.route &&
          each.promptKiB === long.promptKiB &&
          each.writes === long.writes &&
          each.chunks < long.chunks,
      )
      .sort((a, b) => a.chunks - b.chunks)[0];
    if (base === undefined) continue;
    const extraChunks = long.chunks - base.chunks;
    const gatewayLong = perRequestMs(long.gateway);
    const gatewayBase = perRequestMs(base.gateway);
    if (gatewayLong === null || gatewayBase === null) continue;
    const floorLong = perRequestMs(long.floor);
    const floorBase = perRequestMs(base.floor);
    rows.push({
      id: long.id,
      route: long.route,
      chunks: long.chunks,
      baseId: base.id,
      baseChunks: base.chunks,
      gatewayMicrosPerChunk: ((gatewayLong - gatewayBase) * 1000) / extraChunks,
      floorMicrosPerChunk:
        floorLong === null || floorBase === null ? null : ((floorLong - floorBase) * 1000) / extraChunks,
      gatewayStreamMs: gatewayLong,
      floorStreamMs: floorLong,
    });
  }
  return rows;
}
