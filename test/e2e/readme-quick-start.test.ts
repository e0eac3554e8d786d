import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * The README's quick start, run as written on a fresh copy of the repository (every file git tracks, as a clone
 * has them; no ./data, no dist): the server block, then the client block in another shell, on a free port instead
 * of 8080. The one line not run is `npm ci`: the copy links this checkout's node_modules instead, which is what
 * `npm ci` made (running it here would rewrite the shared install).
 */
const ROOT = join(import.meta.dirname, '../..');
const PASSWORD = 'a-long-quick-start-password';

/** The ```sh block after the `<!-- quick-start-test: NAME -->` marker in the README. */
function readmeBlock(name: string): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const marker = readme.indexOf(`<!-- quick-start-test: ${name}`);
  expect(marker, `README has no quick-start-test: ${name} marker`).toBeGreaterThan(0);
  const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(marker))!;
  return block[1]!.split('\n').filter((line) => line.trim() !== '');
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}

/** What a fresh shell has: no gateway settings inherited from the test run. */
function cleanEnvironment(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const name of ['PATH', 'HOME', 'TMPDIR', 'LANG', 'npm_config_cache']) if (process.env[name] !== undefined) env[name] = process.env[name];
  return env;
}

describe('README quick start', () => {
  let clone: string | undefined;
  let server: ChildProcess | undefined;

  afterAll(() => {
    // The whole process group: bash, npm and the gateway node process.
    if (server?.pid !== undefined) {
      try {
        process.kill(-server.pid, 'SIGTERM');
      } catch {
        // already gone
      }
    }
    if (clone !== undefined) rmSync(clone, { recursive: true, force: true });
  });

  it('works as written on a fresh checkout: banner with the dashboard URL, account, key, a chat completion', async () => {
    const serverLines = readmeBlock('server');
    const clientLines = readmeBlock('client');
    expect(serverLines[0]).toBe('npm ci');
    expect(serverLines.some((line) => /^PORT=8080 npm start$/.test(line))).toBe(true);
    // One name for the key everywhere: the README sets the variable it then uses.
    expect(clientLines.join('\n')).toContain('export TOLLGATE_API_KEY=');
    expect(clientLines.join('\n')).toContain('$TOLLGATE_API_KEY');
    expect(readFileSync(join(ROOT, 'README.md'), 'utf8')).not.toMatch(/\$TOLLGATE_KEY\b/);

    clone = mkdtempSync(join(tmpdir(), 'tollgate-quick-start-'));
    const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' }).split('\0').filter((path) => path !== '');
    for (const path of tracked) {
      if (!existsSync(join(ROOT, path))) continue; // deleted in the working tree, not committed yet
      mkdirSync(dirname(join(clone, path)), { recursive: true });
      cpSync(join(ROOT, path), join(clone, path));
    }
    symlinkSync(realpathSync(join(ROOT, 'node_modules')), join(clone, 'node_modules'));
    expect(existsSync(join(clone, 'data'))).toBe(false);

    const port = await freePort();
    const onPort = (line: string) => line.replaceAll('8080', String(port));
    const serverScript = serverLines.filter((line) => line !== 'npm ci').map(onPort).join('\n');
    server = spawn('bash', ['-c', serverScript], { cwd: clone, env: cleanEnvironment(), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    server.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    server.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => server!.once('exit', resolve));
    // It builds first (tsc, the server bundle, the dashboard), which takes a while on a busy machine.
    const banner = await Promise.race([
      (async () => {
        while (!/dashboard: http/.test(output)) await new Promise((resolve) => setTimeout(resolve, 250));
        return output;
      })(),
      exited.then((code) => {
        throw new Error(`npm start exited (${code}) before listening:\n${output}`);
      }),
    ]);
    expect(banner).toContain(`dashboard: http://localhost:${port}/`);
    expect(banner).toContain('TOLLGATE_API_KEY');
    const page = await fetch(`http://localhost:${port}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<div id="root">');

    // The client block in its own shell (the "other terminal"), the password arriving on stdin as a person types it.
    const client = spawn('bash', ['-e', '-c', `${clientLines.map(onPort).join('\n')}\necho`], { cwd: clone, env: cleanEnvironment(), stdio: ['pipe', 'pipe', 'pipe'] });
    client.stdin!.end(`${PASSWORD}\n`);
    let clientOutput = '';
    let clientErrors = '';
    client.stdout!.on('data', (chunk: Buffer) => (clientOutput += chunk.toString('utf8')));
    client.stderr!.on('data', (chunk: Buffer) => (clientErrors += chunk.toString('utf8')));
    const code = await new Promise<number | null>((resolve) => client.once('exit', resolve));
    expect(code, clientErrors).toBe(0);
    // The password never shows: not echoed by npm, not printed.
    expect(clientOutput + clientErrors).not.toContain(PASSWORD);
    const lines = clientOutput.trim().split('\n');
    expect(lines[0]).toMatch(/^Created account you@example\.com \(acct_/);
    const reply = JSON.parse(lines[lines.length - 1]!) as { object: string; choices: Array<{ message: { content: string } }> };
    expect(reply.object).toBe('chat.completion');
    expect(reply.choices[0]!.message.content.length).toBeGreaterThan(0);
    // The fresh data directory was made by the start.
    expect(existsSync(join(clone, 'data', 'tollgate.db'))).toBe(true);
  }, 900_000);
});
