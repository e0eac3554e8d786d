import { describe, expect, it } from 'vitest';
import {
  parseDirectiveSettings,
  parseDirectivesInText,
  parseRequestDirectives,
  stripDirectives,
} from './fault-directives.js';

describe('fault directives', () => {
  it('reads settings and bare fault names from message text', () => {
    const parsed = parseDirectivesInText('Tell me a story [[sim fault=disconnect-mid-stream after=3]] please');
    expect(parsed).toEqual({ directives: { fault: 'disconnect-mid-stream', afterChunks: 3 }, problems: [] });
    expect(parseDirectivesInText('[[sim rate-limit retry-after=7]]').directives).toEqual({
      fault: 'rate-limit',
      retryAfterSeconds: 7,
    });
  });

  it('reads pacing, length and delays', () => {
    expect(
      parseDirectivesInText('[[sim ttft=250 chunk-delay=10 words=5 stall-mid-stream delay=forever]]').directives,
    ).toEqual({
      ttftMs: 250,
      chunkDelayMs: 10,
      words: 5,
      fault: 'stall-mid-stream',
      delayMs: 'forever',
    });
  });

  it('lets later directives override earlier ones, and the header override the text', () => {
    expect(parseDirectivesInText('[[sim error status=500]] then [[sim status=503]]').directives).toEqual({
      fault: 'error',
      status: 503,
    });
    const parsed = parseRequestDirectives('[[sim error status=500 words=4]]', 'rate-limit');
    expect(parsed.directives).toEqual({ fault: 'rate-limit', status: 500, words: 4 });
    expect(parseRequestDirectives('', ['error', 'status=404']).directives).toEqual({ fault: 'error', status: 404 });
  });

  it('reports unknown names and bad values instead of ignoring them', () => {
    expect(parseDirectiveSettings('fault=explode').problems).toEqual([
      expect.stringContaining("unknown fault 'explode'"),
    ]);
    expect(parseDirectiveSettings('status=200 words=-1 ttft=soon').problems).toEqual([
      "bad value '200' for 'status'",
      "bad value '-1' for 'words'",
      "bad value 'soon' for 'ttft'",
    ]);
    expect(parseDirectiveSettings('colour=blue disconect').problems).toEqual([
      "unknown setting 'colour'",
      "unknown setting 'disconect'",
    ]);
  });

  it('reads the tool, reasoning and cache settings', () => {
    expect(
      parseDirectivesInText(
        '[[sim tool=get_weather,ns.lookup:v2 tool-text=1 reasoning-words=3 cache-read=100 cache-write=20]]',
      ),
    ).toEqual({
      directives: {
        toolNames: ['get_weather', 'ns.lookup:v2'],
        toolText: true,
        reasoningWords: 3,
        cacheReadTokens: 100,
        cacheWriteTokens: 20,
      },
      problems: [],
    });
    expect(parseDirectiveSettings('tool=a,,b tool=bad/name tool-text=2').problems).toEqual([
      "bad value 'a,,b' for 'tool'",
      "bad value 'bad/name' for 'tool'",
      "bad value '2' for 'tool-text'",
    ]);
    expect(stripDirectives('Weather in Lisbon? [[sim tool=get_weather]] now')).toBe('Weather in Lisbon?   now');
  });

  it('reads exact tool arguments as a percent-encoded JSON object, and refuses anything else', () => {
    const args = { file_path: '/tmp/dir with space/a.txt', lines: [1, 2] };
    expect(
      parseDirectivesInText(`Read it [[sim tool=Read args=${encodeURIComponent(JSON.stringify(args))}]]`).directives,
    ).toEqual({
      toolNames: ['Read'],
      toolArguments: args,
    });
    expect(parseDirectiveSettings('args=%5B1%5D args=nope args=%7B').problems).toEqual([
      "bad value '%5B1%5D' for 'args' (a percent-encoded JSON object)",
      "bad value 'nope' for 'args' (a percent-encoded JSON object)",
      "bad value '%7B' for 'args' (a percent-encoded JSON object)",
    ]);
  });

  it('ignores text that is not a directive', () => {
    expect(parseDirectivesInText('[[simulate this]] [sim fault=error] [[ sim error]]')).toEqual({
      directives: {},
      problems: [],
    });
  });
});
