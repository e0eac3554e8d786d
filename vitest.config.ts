import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts', 'bench/**/*.test.ts', 'web/src/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Suites share the local PostgreSQL; each uses its own schema, so files may run in parallel.
    pool: 'forks',
    // Installs the agent test package (test/agents) on demand, once, before the suites that use it.
    globalSetup: ['test/global-setup.ts'],
  },
});
