import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The README's Node range is package.json's `engines`: Node 24, the active LTS the suite runs on, and 22 from
 * 22.15 (the lowest the OpenTelemetry SDK 3.x accepts). Every installed package
 * of the lockfile must accept the lowest version of each line the range allows, so `npm ci` is quiet on all of
 * them (it warns EBADENGINE otherwise).
 */
const ROOT = join(import.meta.dirname, '..');
// semver comes with npm's own dependency tree here (vite, esbuild, …); only this check uses it.
const semver = createRequire(import.meta.url)('semver') as { satisfies(version: string, range: string): boolean };

describe('the stated Node range', () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { version?: string; engines?: { node?: string } | string[]; optional?: boolean }>;
  };

  it('is the same in the README and package.json', () => {
    // The suite itself runs on the newest line (.ci/run installs it where the machine's node is older).
    expect(Number(process.versions.node.split('.')[0])).toBeGreaterThanOrEqual(24);
    expect(pkg.engines.node).toBe('>=22.15.0');
    expect(readFileSync(join(ROOT, 'README.md'), 'utf8')).toContain(
      'Requires Node.js 24 (the active LTS, what the suite and CI run on) or 22.15 and later',
    );
  });

  it('is accepted by every package the lockfile installs (optional platform packages aside)', () => {
    // The lowest version of each supported line.
    const versions = ['22.15.0', '24.0.0'];
    for (const version of versions) expect(semver.satisfies(version, pkg.engines.node), version).toBe(true);
    const refusals: string[] = [];
    for (const [path, entry] of Object.entries(lock.packages)) {
      const range = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
      if (path === '' || range === undefined || entry.optional === true) continue;
      for (const version of versions)
        if (!semver.satisfies(version, range))
          refusals.push(`${path}@${entry.version} wants node ${range}, not ${version}`);
    }
    expect(refusals).toEqual([]);
  });
});
