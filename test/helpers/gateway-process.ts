/**
 * A real gateway process (`node dist/bundle/cli.js serve`) on a free loopback port, for the tests that need several
 * instances (scale-out, key limits across instances, Redis-shared rate limits) or one to kill.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { BUILT_CLI } from './cli-path.js';

/** Set TOLLGATE_TEST_CLI to run another build of the CLI; `npm test` builds dist first. */
export const GATEWAY_CLI = process.env.TOLLGATE_TEST_CLI ?? BUILT_CLI;

export interface GatewayProcess {
  url: string;
  child: ChildProcess;
}

/** Starts `serve` with `env` over this process's environment; resolves once it listens, with its address. */
export async function startGatewayProcess(env: Record<string, string>): Promise<GatewayProcess> {
  const child = spawn(process.execPath, [GATEWAY_CLI, 'serve'], {
    env: { ...process.env, ...env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => {
    output += chunk;
  });
  child.stdout!.setEncoding('utf8');
  for await (const chunk of child.stdout!) {
    output += chunk as string;
    const match = /listening on (http:\/\/[\d.:]+)/.exec(output);
    if (match) {
      // Keep draining, so a chatty instance never blocks on a full pipe.
      child.stdout!.resume();
      return { url: match[1]!, child };
    }
  }
  throw new Error(`gateway exited before listening: ${output}`);
}
