import { describe, expect, it } from 'vitest';
import { GLIBC_MALLOC_ENV, mallocReexecEnvironment } from './glibc-malloc.js';

const serve = ['/usr/bin/node', '/app/dist/src/cli.js', 'serve'];

describe('mallocReexecEnvironment', () => {
  it('starts `serve` again on Linux with both settings, keeping the rest of the environment', () => {
    expect(mallocReexecEnvironment(serve, { PORT: '8080' }, 'linux', true)).toEqual({
      PORT: '8080',
      ...GLIBC_MALLOC_ENV,
    });
    const withOption = ['/usr/bin/node', '/app/dist/src/cli.js', '--json', 'serve'];
    expect(mallocReexecEnvironment(withOption, {}, 'linux', true)).toMatchObject(GLIBC_MALLOC_ENV);
  });

  it('leaves alone other commands, other systems and a Node that cannot exec in place', () => {
    expect(mallocReexecEnvironment(['/usr/bin/node', '/app/cli.js', 'migrate'], {}, 'linux', true)).toBeUndefined();
    expect(mallocReexecEnvironment(['/usr/bin/node', '/app/cli.js'], {}, 'linux', true)).toBeUndefined();
    expect(mallocReexecEnvironment(serve, {}, 'darwin', true)).toBeUndefined();
    expect(mallocReexecEnvironment(serve, {}, 'linux', false)).toBeUndefined();
  });

  it("leaves alone an operator's own malloc settings, so it never starts twice", () => {
    expect(mallocReexecEnvironment(serve, { MALLOC_TRIM_THRESHOLD_: '131072' }, 'linux', true)).toBeUndefined();
    expect(mallocReexecEnvironment(serve, { MALLOC_MMAP_THRESHOLD_: '0' }, 'linux', true)).toBeUndefined();
    expect(mallocReexecEnvironment(serve, { ...GLIBC_MALLOC_ENV }, 'linux', true)).toBeUndefined();
    const tunables = { GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' };
    expect(mallocReexecEnvironment(serve, tunables, 'linux', true)).toBeUndefined();
    const otherTunables = { GLIBC_TUNABLES: 'glibc.pthread.rseq=0' };
    expect(mallocReexecEnvironment(serve, otherTunables, 'linux', true)).toMatchObject(GLIBC_MALLOC_ENV);
  });
});
