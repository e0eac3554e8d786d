/**
 * A PostgreSQL cluster of the test's own (initdb in a temp directory, pg_ctl on a port the test has just proven
 * free), which the test may stop (`-m fast`, `-m immediate`) and start again: the shared server on 5432 is never
 * touched. PostgreSQL refuses to run as root, so as root (CI, these machines) it runs as the `postgres` user the
 * server package creates.
 */
import { execFile } from 'node:child_process';
import { chownSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './free-port.js';

const run = promisify(execFile);

export interface PrivatePostgres {
  port: number;
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust authentication). */
  url: string;
  stop(mode: 'fast' | 'immediate'): Promise<void>;
  start(): Promise<void>;
  /** What the server has logged so far (with `log_statement: 'all'`, every statement it ran). */
  serverLog(): string;
  /** Stops it (if running) and deletes its directory. */
  destroy(): Promise<void>;
}

/** The newest installed server's binaries (Debian: /usr/lib/postgresql/<major>/bin). */
function postgresBin(): string {
  const root = '/usr/lib/postgresql';
  const majors = readdirSync(root)
    .filter((name) => /^\d+$/.test(name))
    .sort((a, b) => Number(b) - Number(a));
  if (majors.length === 0) throw new Error(`No PostgreSQL server under ${root}.`);
  return join(root, majors[0]!, 'bin');
}

/** `settings` are server parameters for its command line (`-c name=value`), e.g. `{ log_statement: 'all' }`. */
export async function startPrivatePostgres(settings: Record<string, string> = {}): Promise<PrivatePostgres> {
  const bin = postgresBin();
  const root = mkdtempSync(join(tmpdir(), 'tollgate-pg-'));
  const data = join(root, 'data');
  const asRoot = userInfo().uid === 0;
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: group } = await run('id', ['-g', 'postgres']);
    chownSync(root, Number(stdout.trim()), Number(group.trim()));
  }
  const pg = (tool: string, args: string[]) =>
    asRoot ? run('runuser', ['-u', 'postgres', '--', join(bin, tool), ...args]) : run(join(bin, tool), args);
  await pg('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  const port = await freePort();
  // The socket directory is the cluster's own (not /var/run/postgresql); fsync off: nothing here must survive the host.
  const extra = Object.entries(settings)
    .map(([name, value]) => ` -c ${name}=${JSON.stringify(value)}`)
    .join('');
  const options = `-p ${port} -k ${root} -c listen_addresses=127.0.0.1 -c fsync=off${extra}`;
  let running = false;
  const start = async () => {
    await pg('pg_ctl', ['start', '-w', '-t', '60', '-D', data, '-l', join(root, 'server.log'), '-o', options]);
    running = true;
  };
  await start();
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async stop(mode) {
      await pg('pg_ctl', ['stop', '-w', '-t', '60', '-m', mode, '-D', data]);
      running = false;
    },
    start,
    serverLog: () => readFileSync(join(root, 'server.log'), 'utf8'),
    async destroy() {
      if (running) await pg('pg_ctl', ['stop', '-w', '-m', 'immediate', '-D', data]).catch(() => undefined);
      rmSync(root, { recursive: true, force: true });
    },
  };
}
