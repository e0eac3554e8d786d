import { describe, expect, it } from 'vitest';
import {
  descriptorsNeeded,
  fileLimitProblem,
  formatC10k,
  judgeC10k,
  StampReader,
  type C10kTargetResult,
} from './c10k.js';
import { chunkStamps } from './mock-reply.js';
import { parseBenchOptions } from './options.js';

describe('reading a slow stream', () => {
  it('opens at the first content delta and reads each stamp once its event is complete, however the pieces split', () => {
    const reader = new StampReader();
    expect(reader.push('data: {"choices":[{"delta":{"role":"assistant","content":""}}]}\n\n')).toEqual([]);
    expect(reader.opened).toBe(false);
    expect(
      reader.push(
        'data: {"choices":[{"delta":{"content":"Reply k1:"}}]}\n\ndata: {"choices":[{"delta":{"content":" t17',
      ),
    ).toEqual([]);
    expect(reader.opened).toBe(true);
    // The stamp was cut mid-number: it is read whole once its event ends, not as 17.
    expect(reader.push('00000000.250"}}]}\n\n')).toEqual([1700000000.25]);
    expect(chunkStamps('{"text":" t1.5"} {"text":" t2.25"}')).toEqual([1.5, 2.25]);
  });
});

describe('the file limit', () => {
  it('asks for two descriptors per stream and names the most streams a hard limit allows', () => {
    expect(descriptorsNeeded(1000)).toBe(2512);
    expect(fileLimitProblem(1000, 20_000)).toBeUndefined();
    expect(fileLimitProblem(10_000, 20_000)).toMatch(/hard limit of 20000.*--c10k-streams 9744/);
  });
});

function result(target: 'gateway' | 'floor', overrides: Partial<C10kTargetResult> = {}): C10kTargetResult {
  return {
    target,
    streams: 1000,
    opened: 1000,
    failures: 0,
    failureMessages: [],
    openSeconds: 10,
    idleRssKiB: 100_000,
    openRssKiB: 110_000,
    rssPerStreamKB: 10.24,
    holdCores: 0.1,
    probes: { count: 100, ttftP50Ms: 1, ttftP99Ms: 4, directP50Ms: 0.5, directP99Ms: 1 },
    chunkDelays: { count: 20_000, p50Ms: 1, p99Ms: 20, worstMs: 60 },
    ...overrides,
  };
}

describe('the c10k verdicts', () => {
  it('judges the gateway’s own RSS and TTFT, and its worst chunk delay less the floor’s', () => {
    const verdicts = judgeC10k([
      result('gateway'),
      result('floor', { chunkDelays: { count: 20_000, p50Ms: 1, p99Ms: 5, worstMs: 10 } }),
    ]);
    expect(verdicts.map((verdict) => verdict.pass)).toEqual([true, true, true, true]);
    expect(verdicts[3]?.measured).toBe("50.0 ms (gateway's worst 60.0 ms, floor's 10.0 ms)");
    const slow = judgeC10k([
      result('gateway', {
        opened: 990,
        failures: 10,
        rssPerStreamKB: 25,
        chunkDelays: { count: 1, p50Ms: 1, p99Ms: 1, worstMs: 200 },
      }),
      result('floor', { chunkDelays: { count: 1, p50Ms: 1, p99Ms: 1, worstMs: 50 } }),
    ]);
    expect(slow.map((verdict) => verdict.pass)).toEqual([false, false, true, false]);
  });

  it('leaves the chunk delay unjudged without a floor, and prints every target', () => {
    expect(judgeC10k([result('gateway')])[3]?.pass).toBeNull();
    const text = formatC10k({
      startedAt: '',
      finishedAt: '',
      options: { streams: 1000, probes: 100, holdSeconds: 20 },
      environment: { node: 'v24', cpuModel: 'x', cpuCount: 2, loadAverageAtStart: 0, fileLimit: '2512' },
      results: [result('gateway'), result('floor')],
    });
    expect(text).toMatch(/RSS per open stream <= 20 KB\s+10\.2 KB \(floor 10\.2 KB\)\s+yes/);
    expect(text).toMatch(/added TTFT p99 of a new request <= 5 ms\s+\+3\.00 ms/);
  });
});

describe('the c10k options', () => {
  it('holds 10,000 streams unless told fewer, and is a mode of its own', () => {
    expect(parseBenchOptions(['--c10k'])?.c10k).toEqual({ streams: 10_000, probes: 200, holdSeconds: 20 });
    expect(parseBenchOptions(['--c10k-streams', '1000'])?.c10k?.streams).toBe(1000);
    expect(parseBenchOptions([])?.c10k).toBeUndefined();
    expect(() => parseBenchOptions(['--c10k', '--soak', '60'])).toThrow(/separate modes/);
    expect(() => parseBenchOptions(['--c10k-streams', '0'])).toThrow(/at least 1/);
  });
});
