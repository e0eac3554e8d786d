import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts', 'bench/**/*.test.ts', 'web/src/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Suites share the local PostgreSQL; each uses its own schema, so files may run in parallel.
    pool: 'forks',
    // At least two files at a time, even on a 2-core machine (vitest's default there is one): most of a file's time
    // is spent waiting on the gateway processes, browsers and agent CLIs it starts. Measured on 2 cores: 275 files
    // took 20 minutes with two workers, where their summed test time was 36.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    minWorkers: 1,
    // Installs the agent test package (test/agents) on demand, once, before the suites that use it.
    globalSetup: ['test/global-setup.ts'],
  },
});
