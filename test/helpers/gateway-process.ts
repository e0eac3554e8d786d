/**
 * A bare gateway process on a free loopback port, for the tests that need several instances (scale-out, key limits
 * across instances, Redis-shared rate limits) or one to kill, and bring their own database and upstream. Started
 * by the same code as `startTestGateway`, so there is one way the tests run the artifact.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnGateway, stopProcess } from './test-gateway.js';

export interface GatewayProcess {
  url: string;
  child: ChildProcess;
  /** Every line the process wrote (warnings and errors only: it logs at warn). */
  logs: string[];
  /** SIGTERM, then the exit code once it has exited. */
  stop(): Promise<number | null>;
}

/**
 * Starts `serve` with `env` (plus PATH); resolves once it listens, with its address. Without a
 * SETTLEMENT_JOURNAL_DIR of the test's, the journal goes to a temp folder of its own (removed by `stop`), never
 * the working directory's ./data.
 */
export async function startGatewayProcess(env: Record<string, string>): Promise<GatewayProcess> {
  const logs: string[] = [];
  const journal =
    env.SETTLEMENT_JOURNAL_DIR === undefined ? mkdtempSync(join(tmpdir(), 'tollgate-journal-')) : undefined;
  const { child, url } = await spawnGateway(
    {
      ...(journal === undefined ? {} : { SETTLEMENT_JOURNAL_DIR: journal }),
      ...env,
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
    },
    logs,
  );
  return {
    url,
    child,
    logs,
    async stop() {
      const code = await stopProcess(child);
      if (journal !== undefined) rmSync(journal, { recursive: true, force: true });
      return code;
    },
  };
}
