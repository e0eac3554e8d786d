import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { GLIBC_MALLOC_ENV } from '../../src/glibc-malloc.js';
import { startGatewayProcess } from '../helpers/gateway-process.js';

/** The environment a running process started its current image with, as /proc shows it. */
function environmentOf(pid: number): Record<string, string> {
  const entries = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean);
  return Object.fromEntries(
    entries.map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]),
  );
}

// The built CLI as users start it: `serve` re-executes itself in place with glibc's malloc settings.
describe.runIf(process.platform === 'linux')('the gateway process and glibc malloc', () => {
  it('serves from the pid it was started as, with the malloc settings in its environment', async () => {
    const gateway = await startGatewayProcess({ DATABASE_URL: 'sqlite::memory:' });
    try {
      expect(environmentOf(gateway.child.pid!)).toMatchObject(GLIBC_MALLOC_ENV);
      expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
    } finally {
      expect(await gateway.stop()).toBe(0);
    }
  });

  it("keeps an operator's own setting", async () => {
    const gateway = await startGatewayProcess({ DATABASE_URL: 'sqlite::memory:', MALLOC_TRIM_THRESHOLD_: '262144' });
    try {
      const environment = environmentOf(gateway.child.pid!);
      expect(environment.MALLOC_TRIM_THRESHOLD_).toBe('262144');
      expect(environment.MALLOC_MMAP_THRESHOLD_).toBeUndefined();
    } finally {
      await gateway.stop();
    }
  });
});
