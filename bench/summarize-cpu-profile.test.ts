import { describe, expect, it } from 'vitest';
import { summarize } from './summarize-cpu-profile.js';

const frame = (functionName: string, url = '') => ({ functionName, url, lineNumber: 0, columnNumber: 0 });

describe('summarize', () => {
  // root -> handler (src) -> query (kysely) ; root -> (idle). Sample times: timeDeltas[i + 1] belongs to sample i.
  const profile = {
    nodes: [
      { id: 1, callFrame: frame('(root)'), children: [2, 4] },
      { id: 2, callFrame: frame('handler', 'file:///repo/dist/src/pipeline/chat-pipeline.js'), children: [3] },
      { id: 3, callFrame: frame('executeQuery', 'file:///repo/node_modules/kysely/dist/esm/driver.js') },
      { id: 4, callFrame: frame('(idle)') },
    ],
    samples: [2, 3, 3, 4, 2],
    timeDeltas: [0, 1000, 2000, 3000, 5000, 0],
  };

  it('splits self time, subtree time and areas, leaving idle out', () => {
    const summary = summarize(profile);
    expect(summary.idleMs).toBe(5);
    expect(summary.busyMs).toBe(6); // handler 1 + 0, executeQuery 2 + 3
    expect(summary.bySelf.map((entry) => [entry.name.split(' ')[0], entry.ms])).toEqual([
      ['executeQuery', 5],
      ['handler', 1],
    ]);
    expect(summary.bySubtree.find((entry) => entry.name.startsWith('handler'))?.ms).toBe(6);
    expect(summary.bySourceSubtree.map((entry) => entry.name)).toEqual(['handler src/pipeline/chat-pipeline.js:1']);
    expect(summary.byArea.map((entry) => [entry.name, entry.ms])).toEqual([
      ['kysely', 5],
      ['src/pipeline/', 1],
    ]);
  });
});
