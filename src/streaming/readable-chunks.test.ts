import { PassThrough, Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { bodyChunks } from './readable-chunks.js';

const bytes = (text: string) => new TextEncoder().encode(text);
const text = (chunk: Uint8Array) => new TextDecoder().decode(chunk);

async function readAll(iterator: AsyncIterator<Uint8Array>): Promise<{ chunks: string[]; error?: string }> {
  const chunks: string[] = [];
  try {
    for (;;) {
      const result = await iterator.next();
      if (result.done === true) return { chunks };
      chunks.push(text(result.value));
    }
  } catch (error) {
    return { chunks, error: (error as Error).message };
  }
}

describe('bodyChunks of a Readable', () => {
  it('gives the chunks in order, those that arrived before the first next() included, then done (again and again)', async () => {
    const body = new PassThrough();
    const chunks = bodyChunks(body);
    body.write('a');
    body.write('b');
    await new Promise((resolve) => setImmediate(resolve));
    setImmediate(() => body.end('c'));
    expect(await readAll(chunks)).toEqual({ chunks: ['a', 'b', 'c'] });
    expect(await chunks.next()).toEqual({ done: true, value: undefined });
  });

  it('gives the chunks that arrived before a failure, then the failure, on every later call too', async () => {
    const body = new PassThrough();
    const chunks = bodyChunks(body);
    body.write('a');
    await new Promise((resolve) => setImmediate(resolve));
    body.destroy(new Error('socket hang up'));
    expect(await readAll(chunks)).toEqual({ chunks: ['a'], error: 'socket hang up' });
    await expect(chunks.next()).rejects.toThrow('socket hang up');
  });

  it('fails a waiting next() when the body closes without ending', async () => {
    const body = new PassThrough();
    const chunks = bodyChunks(body);
    const pending = chunks.next();
    body.destroy();
    await expect(pending).rejects.toThrow('closed before it ended');
  });

  it('pauses a body whose chunks nobody takes, and resumes it once they are taken', async () => {
    const body = new PassThrough({ highWaterMark: 1024 });
    const chunks = bodyChunks(body);
    const piece = 'x'.repeat(16 * 1024);
    for (let i = 0; i < 8; i++) body.write(piece);
    await new Promise((resolve) => setImmediate(resolve));
    expect(body.isPaused()).toBe(true);
    body.end();
    const all = await readAll(chunks);
    expect(all.chunks.join('').length).toBe(8 * piece.length);
    expect(body.isPaused()).toBe(false);
  });

  it('iterates any other async iterable as it is', async () => {
    async function* generator() {
      yield bytes('one');
      yield bytes('two');
    }
    expect(await readAll(bodyChunks(generator()))).toEqual({ chunks: ['one', 'two'] });
    expect(await readAll(bodyChunks(Readable.from([bytes('r')])))).toEqual({ chunks: ['r'] });
  });
});
