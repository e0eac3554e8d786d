/**
 * Summarises a V8 `.cpuprofile` (from `npm run bench -- --cpu-prof DIR`): the functions with the most self
 * time, the functions with the most time in their subtree (themselves and everything they call), and self
 * time by area of the code (a src/ folder, a package, node internals, GC). Idle time is left out of every
 * percentage, so they add up to the CPU the process actually spent.
 *
 * Usage: node dist/bench/summarize-cpu-profile.js FILE.cpuprofile [--top N]
 */
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface Entry {
  name: string;
  ms: number;
  percent: number;
}

export interface ProfileSummary {
  busyMs: number;
  idleMs: number;
  bySelf: Entry[];
  bySubtree: Entry[];
  /** Subtree time of the gateway's own functions (src/) only: where in Tollgate's code the time goes. */
  bySourceSubtree: Entry[];
  byArea: Entry[];
}

const IDLE = '(idle)';

function shortUrl(url: string): string {
  if (url === '') return '';
  const path = url.replace(/^file:\/\//, '');
  const modules = path.lastIndexOf('/node_modules/');
  if (modules !== -1) return path.slice(modules + '/node_modules/'.length);
  const source = path.search(/\/(src|bench)\//);
  return source === -1 ? path : path.slice(source + 1);
}

function functionKey(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const where = shortUrl(url);
  return where === '' ? functionName || '(anonymous)' : `${functionName || '(anonymous)'} ${where}:${lineNumber + 1}`;
}

/** Where a function lives: `src/storage`, a package name, `node:internal`, or a V8 pseudo-frame such as (garbage collector). */
function area(node: ProfileNode): string {
  const { url, functionName } = node.callFrame;
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  if (url.startsWith('node:')) return 'node: internals';
  const path = url.replace(/^file:\/\//, '');
  const modules = path.lastIndexOf('/node_modules/');
  if (modules !== -1) {
    const rest = path.slice(modules + '/node_modules/'.length).split('/');
    return rest[0]?.startsWith('@') === true ? `${rest[0]}/${rest[1]}` : (rest[0] ?? path);
  }
  const source = /\/(src|bench)\/([^/]+)/.exec(path);
  if (source === null) return path;
  return source[2]?.endsWith('.js') === true ? `${source[1]}/${source[2]}` : `${source[1]}/${source[2]}/`;
}

export function summarize(profile: CpuProfile, top = 25): ProfileSummary {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfMicros = new Map<number, number>();
  // timeDeltas[i] is the time before sample i; the time a sample stands for is the gap to the next one.
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!;
    const micros = profile.timeDeltas[i + 1] ?? 0;
    selfMicros.set(id, (selfMicros.get(id) ?? 0) + Math.max(0, micros));
  }
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);

  let idleMicros = 0;
  const self = new Map<string, number>();
  const areas = new Map<string, number>();
  const subtree = new Map<string, number>();
  for (const [id, micros] of selfMicros) {
    const node = byId.get(id);
    if (node === undefined || micros === 0) continue;
    if (node.callFrame.functionName === IDLE) {
      idleMicros += micros;
      continue;
    }
    const key = functionKey(node);
    self.set(key, (self.get(key) ?? 0) + micros);
    const nodeArea = area(node);
    areas.set(nodeArea, (areas.get(nodeArea) ?? 0) + micros);
    // Charge the sample to every distinct function on its stack once (recursion counted once).
    const seen = new Set<string>();
    for (let current: number | undefined = id; current !== undefined; current = parent.get(current)) {
      const frame = byId.get(current);
      if (frame === undefined) break;
      const frameKey = functionKey(frame);
      if (frameKey === '(root)' || seen.has(frameKey)) continue;
      seen.add(frameKey);
      subtree.set(frameKey, (subtree.get(frameKey) ?? 0) + micros);
    }
  }
  const busyMicros = [...self.values()].reduce((sum, micros) => sum + micros, 0);
  const ranked = (map: Map<string, number>, limit: number): Entry[] =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, limit)
      .map(([name, micros]) => ({
        name,
        ms: micros / 1000,
        percent: busyMicros === 0 ? 0 : (micros * 100) / busyMicros,
      }));
  const sourceSubtree = new Map([...subtree].filter(([key]) => / src\//.test(key)));
  return {
    busyMs: busyMicros / 1000,
    idleMs: idleMicros / 1000,
    bySelf: ranked(self, top),
    bySubtree: ranked(subtree, top),
    bySourceSubtree: ranked(sourceSubtree, top),
    byArea: ranked(areas, top),
  };
}

export function formatSummary(summary: ProfileSummary): string {
  const table = (title: string, entries: Entry[]): string =>
    [
      title,
      ...entries.map(
        (entry) => `${entry.percent.toFixed(1).padStart(6)}%  ${entry.ms.toFixed(0).padStart(7)} ms  ${entry.name}`,
      ),
    ].join('\n');
  return [
    `busy ${summary.busyMs.toFixed(0)} ms, idle ${summary.idleMs.toFixed(0)} ms (percentages are of busy time)`,
    table('== self time by area', summary.byArea),
    table('== self time by function', summary.bySelf),
    table('== subtree (inclusive) time by function', summary.bySubtree),
    table('== subtree (inclusive) time of Tollgate functions (src/)', summary.bySourceSubtree),
  ].join('\n\n');
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [file, ...rest] = process.argv.slice(2);
  if (file === undefined) {
    process.stderr.write('Usage: node dist/bench/summarize-cpu-profile.js FILE.cpuprofile [--top N]\n');
    process.exit(2);
  }
  const topIndex = rest.indexOf('--top');
  const top = topIndex === -1 ? 25 : Number(rest[topIndex + 1]);
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  process.stdout.write(`${formatSummary(summarize(profile, top))}\n`);
}
