import { describe, expect, it } from 'vitest';
import { REPLY_CHUNKS } from './mock-reply.js';
import { parseBenchOptions } from './options.js';
import { describeUpstream } from './report.js';
import {
  PACE_MS,
  requestBodyParts,
  ROUTES,
  SCENARIOS,
  SHAPE_SCENARIOS,
  scenarioPicked,
  targetsFor,
  withUpstreamMode,
} from './scenarios.js';

describe('how the load arrives', () => {
  it('spreads the 64 paced streams evenly over one reply, and keeps a burst of 64 beside them', () => {
    const steady = SHAPE_SCENARIOS.find((each) => each.id === 'same-format-paced-c64');
    const burst = SHAPE_SCENARIOS.find((each) => each.id === 'same-format-paced-c64-burst');
    expect(steady).toMatchObject({
      concurrency: 64,
      paceMs: PACE_MS,
      floor: true,
      startSpreadMs: REPLY_CHUNKS * PACE_MS,
    });
    expect(burst).toMatchObject({ concurrency: 64, paceMs: PACE_MS, floor: true, startSpreadMs: 0 });
  });

  it('starts unpaced scenarios together: they measure throughput', () => {
    for (const each of [...SCENARIOS, ...SHAPE_SCENARIOS].filter((scenario) => scenario.paceMs === 0))
      expect(each.startSpreadMs).toBe(0);
  });

  it('gives every scenario its own id', () => {
    const ids = [...SCENARIOS, ...SHAPE_SCENARIOS].map((each) => each.id);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe('the upstream every stream is read on', () => {
  const stream = SCENARIOS.find((each) => each.id === 'same-format-stream-c64');
  const json = SCENARIOS.find((each) => each.id === 'same-format-json-c16');
  const paced = SCENARIOS.find((each) => each.id === 'same-format-paced-c1');

  it('writes events one by one by default, and keeps the coalesced c1 stream beside it as a second figure', () => {
    expect(stream?.writes).toBe('per-event');
    const coalesced = SCENARIOS.find((each) => each.id === 'same-format-stream-c1-coalesced');
    expect(coalesced).toMatchObject({ writes: 'coalesced', floor: true, concurrency: 1 });
    expect(parseBenchOptions([])?.upstream).toBe('per-event');
  });

  it('gives every unpaced stream a vendor’s pace in paced mode, arrivals spread, ids kept, JSON untouched', () => {
    if (stream === undefined || json === undefined || paced === undefined) throw new Error('scenario missing');
    const [streamPaced, jsonPaced, alreadyPaced] = withUpstreamMode([stream, json, paced], 'paced', 25);
    expect(streamPaced).toMatchObject({ id: stream.id, paceMs: 25, startSpreadMs: 20 * 25 });
    expect(streamPaced?.title).toContain("a vendor's pace of 25 ms");
    expect(jsonPaced).toBe(json);
    expect(alreadyPaced).toBe(paced);
    expect(withUpstreamMode([stream], 'coalesced', 25)[0]?.writes).toBe('coalesced');
    expect(withUpstreamMode([stream], 'per-event', 25)[0]).toBe(stream);
  });

  it('asks the mock for its shape in the prompt', () => {
    const target = targetsFor(ROUTES['same-format'], 'http://mock', 'http://gw', 'k').direct;
    const asks = (writes: 'per-event' | 'coalesced', stamp: boolean) => {
      const { before, after } = requestBodyParts(target, true, 0, { writes, stamp });
      return before + after;
    };
    expect(asks('coalesced', false)).toContain('upstream-writes=coalesced');
    expect(asks('per-event', false)).not.toContain('upstream-writes');
    expect(asks('per-event', true)).toContain('stamp-chunks');
  });

  it('takes the mode and the pace from the command line', () => {
    expect(parseBenchOptions(['--upstream', 'paced', '--upstream-pace-ms', '30'])).toMatchObject({
      upstream: 'paced',
      upstreamPaceMs: 30,
    });
    expect(parseBenchOptions([])?.upstreamPaceMs).toBe(20);
    expect(() => parseBenchOptions(['--upstream', 'bunched'])).toThrow(/per-event, paced, coalesced/);
  });
});

describe('the report’s upstream line', () => {
  it('says how the mock wrote the run’s streams', () => {
    expect(describeUpstream({ upstream: 'per-event', upstreamPaceMs: 20 })).toContain('each SSE event in its own');
    expect(describeUpstream({ upstream: 'paced', upstreamPaceMs: 25 })).toContain('25 ms between content events');
    expect(describeUpstream({ upstream: 'coalesced', upstreamPaceMs: 20 })).toContain('coalesced');
  });
});

describe('which scenarios --scenarios picks', () => {
  const ids = [...SCENARIOS, ...SHAPE_SCENARIOS].map((each) => each.id);
  const picked = (...words: string[]) => ids.filter((id) => scenarioPicked(id, words));

  it('picks every scenario with no words, and those containing a word otherwise', () => {
    expect(picked()).toEqual(ids);
    expect(picked('same-format-json-c1')).toEqual([
      'same-format-json-c1',
      'same-format-json-c16',
      'same-format-json-c128',
      'same-format-json-c16-32kb',
      'same-format-json-c16-256kb',
    ]);
  });

  it('picks only the id a word ending in $ spells, beside the other words', () => {
    expect(picked('same-format-json-c1$')).toEqual(['same-format-json-c1']);
    expect(picked('same-format-json-c1$', '2000ch')).toEqual([
      'same-format-json-c1',
      'same-format-stream-c1-2000ch',
      'openai-to-anthropic-stream-c1-2000ch',
    ]);
    expect(picked('same-format-json-c$')).toEqual([]);
  });
});
