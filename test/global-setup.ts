import { ensureAgentsPackage } from './helpers/agents-package.js';

/**
 * Runs once before any test file: the agent test package (test/agents) must be in place before the suites that
 * drive the agent CLIs and the newest SDKs start in parallel forks. A no-op when it is installed and current.
 */
export default async function setup(): Promise<void> {
  await ensureAgentsPackage((line) => console.log(`[global-setup] ${line}`));
}
