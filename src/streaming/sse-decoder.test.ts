import { describe, expect, it } from 'vitest';
import { SseDecoder, type SseEvent } from './sse-decoder.js';
import { SSE_DONE, sseComment, sseData, sseEvent } from './sse-writer.js';

const utf8 = new TextEncoder();

/** Feeds `text` split at the given byte offsets and returns every event, end() included. */
function decodeSplit(bytes: Uint8Array, cuts: number[]): SseEvent[] {
  const decoder = new SseDecoder();
  const events: SseEvent[] = [];
  let previous = 0;
  for (const cut of [...cuts, bytes.length]) {
    events.push(...decoder.push(bytes.subarray(previous, cut)));
    previous = cut;
  }
  events.push(...decoder.end());
  return events;
}

function decodeText(text: string): SseEvent[] {
  return decodeSplit(utf8.encode(text), []);
}

describe('SseDecoder line ends', () => {
  it('accepts LF, CRLF and bare CR alike', () => {
    const expected = [{ data: 'a' }, { data: 'b', event: 'x' }];
    expect(decodeText('data: a\n\nevent: x\ndata: b\n\n')).toEqual(expected);
    expect(decodeText('data: a\r\n\r\nevent: x\r\ndata: b\r\n\r\n')).toEqual(expected);
    expect(decodeText('data: a\r\revent: x\rdata: b\r\r')).toEqual(expected);
    expect(decodeText('data: a\r\n\revent: x\ndata: b\r\n\n')).toEqual(expected);
  });

  it('treats a CRLF split across two chunks as one line end', () => {
    const bytes = utf8.encode('data: a\r\n\r\ndata: b\r\n\r\n');
    for (let cut = 1; cut < bytes.length; cut++) {
      expect(decodeSplit(bytes, [cut])).toEqual([{ data: 'a' }, { data: 'b' }]);
    }
  });

  it('dispatches as soon as the closing CR arrives, before a possible LF', () => {
    const decoder = new SseDecoder();
    expect(decoder.push(utf8.encode('data: a\r\n\r'))).toEqual([{ data: 'a' }]);
    expect(decoder.push(utf8.encode('\ndata: b\r\n\r\n'))).toEqual([{ data: 'b' }]);
  });
});

describe('SseDecoder fields', () => {
  it('skips comments, counting them and reporting their text', () => {
    const seen: string[] = [];
    const decoder = new SseDecoder({ onComment: (text) => seen.push(text) });
    const events = decoder.push(utf8.encode(': keep-alive\n\n:ping\ndata: x\n\n'));
    expect(events).toEqual([{ data: 'x' }]);
    expect(decoder.comments).toBe(2);
    expect(seen).toEqual([' keep-alive', 'ping']);
  });

  it('joins multi-line data with LF and keeps empty data lines', () => {
    expect(decodeText('data: one\ndata:two\ndata\ndata:  three\n\n')).toEqual([{ data: 'one\ntwo\n\n three' }]);
    expect(decodeText('data:\n\n')).toEqual([{ data: '' }]);
  });

  it('removes only one space after the colon', () => {
    expect(decodeText('data:  x \n\n')).toEqual([{ data: ' x ' }]);
  });

  it('does not dispatch events without data', () => {
    expect(decodeText('event: ping\n\nid: 3\n\nretry: 10\n\n\n\ndata: x\n\n')).toEqual([{ data: 'x', id: '3' }]);
  });

  it('keeps the last event id across events and resets it with an empty id', () => {
    expect(decodeText('id: 1\ndata: a\n\ndata: b\n\nid\ndata: c\n\nid: x\0y\ndata: d\n\n')).toEqual([
      { data: 'a', id: '1' },
      { data: 'b', id: '1' },
      { data: 'c' },
      { data: 'd' },
    ]);
  });

  it('reads retry only when it is all digits', () => {
    const decoder = new SseDecoder();
    expect(decoder.push(utf8.encode('retry: 1500\ndata: a\n\nretry: 1s\ndata: b\n\n'))).toEqual([
      { data: 'a', retry: 1500 },
      { data: 'b' },
    ]);
    expect(decoder.retry).toBe(1500);
  });

  it('ignores unknown fields and is case-sensitive', () => {
    expect(decodeText('foo: bar\nData: no\ndata: yes\n\n')).toEqual([{ data: 'yes' }]);
  });

  it('passes [DONE] through as ordinary data', () => {
    expect(decodeText('data: {"a":1}\n\n' + SSE_DONE)).toEqual([{ data: '{"a":1}' }, { data: '[DONE]' }]);
  });

  it('strips a leading byte order mark', () => {
    expect(decodeText('\uFEFFdata: a\n\n')).toEqual([{ data: 'a' }]);
  });

  it('strips a byte order mark split across the first chunks, and keeps a U+FEFF after the start as content', () => {
    const bytes = utf8.encode('\uFEFFdata: a\uFEFF\n\n');
    for (const cut of [1, 2, 3]) expect(decodeSplit(bytes, [cut])).toEqual([{ data: 'a\uFEFF' }]);
    expect(decodeSplit(utf8.encode('data: a\n\n\uFEFFdata: b\n\n'), [11])).toEqual([{ data: 'a' }]);
  });
});

describe('SseDecoder UTF-8', () => {
  for (const word of ['é', '日本', '😀', 'naïve 日本語 🎉👍🏽']) {
    it(`joins ${JSON.stringify(word)} split at every byte position`, () => {
      const bytes = utf8.encode(`data: ${word}\n\n`);
      for (let cut = 1; cut < bytes.length; cut++) {
        expect(decodeSplit(bytes, [cut])).toEqual([{ data: word }]);
      }
    });
  }
});

describe('SseDecoder whole streams', () => {
  const stream =
    sseComment('keep-alive') +
    sseEvent('message_start', '{"type":"message_start","text":"héllo 日本 😀"}') +
    'event: delta\r\ndata: line one\r\ndata: line two\r\n\r\n' +
    'data: bare\rdata: cr\r\r' +
    sseData('{"choices":[{"delta":{"content":"🎉 ünïcödé"}}]}') +
    'id: 42\nretry: 3000\ndata:last\n\n' +
    SSE_DONE;

  it('gives identical events when re-fed split at every byte boundary', () => {
    const bytes = utf8.encode(stream);
    const whole = decodeSplit(bytes, []);
    expect(whole).toHaveLength(6);
    for (let cut = 1; cut < bytes.length; cut++) {
      expect(decodeSplit(bytes, [cut])).toEqual(whole);
    }
    // And one byte per chunk.
    expect(
      decodeSplit(
        bytes,
        Array.from({ length: bytes.length - 1 }, (_, i) => i + 1),
      ),
    ).toEqual(whole);
  });

  it('discards an event without its final blank line at end of stream (WHATWG rule)', () => {
    const decoder = new SseDecoder();
    expect(decoder.push(utf8.encode('data: a\n\ndata: b\n'))).toEqual([{ data: 'a' }]);
    expect(decoder.end()).toEqual([]);
    expect(decoder.discardedAtEnd).toBe(true);

    const unterminated = new SseDecoder();
    expect(unterminated.push(utf8.encode('data: a\n\ndata: b'))).toEqual([{ data: 'a' }]);
    expect(unterminated.end()).toEqual([]);
    expect(unterminated.discardedAtEnd).toBe(true);

    const clean = new SseDecoder();
    clean.push(utf8.encode('data: a\n\n: bye\n'));
    clean.end();
    expect(clean.discardedAtEnd).toBe(false);
  });
});

describe('sse-writer', () => {
  it('formats frames', () => {
    expect(sseData('{"a":1}')).toBe('data: {"a":1}\n\n');
    expect(sseEvent('ping', '{}')).toBe('event: ping\ndata: {}\n\n');
    expect(SSE_DONE).toBe('data: [DONE]\n\n');
    expect(sseComment('keep-alive')).toBe(': keep-alive\n\n');
  });
});
