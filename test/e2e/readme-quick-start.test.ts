import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import OpenAI from 'openai';
import type { Page } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { formatCount } from '../../web/src/lib/format.js';
import { DESKTOP_VIEWPORT, launchChromium, type BrowserSession } from '../helpers/chromium-browser.js';
import { createKey, logIn, openNav, screenshot } from '../helpers/dashboard-pages.js';

/**
 * The README's quick start, run as written on a fresh copy of the repository (every file git tracks, as a clone
 * has them; no ./data, no dist): the server block, then the client block in another shell, on a free port instead
 * of 8080. The one line not run is `npm ci`: the copy links this checkout's node_modules instead, which is what
 * `npm ci` made (running it here would rewrite the shared install).
 *
 * Then what the README tells a person to do next, in Chromium against that same `npm start`: open the dashboard,
 * register, create a key, call the gateway with it, and find the call on the Usage page. A built artifact whose
 * dashboard answers 500 passes every curl above, so only the browser catches it. Last, a second `npm start` in the
 * same clone: it serves without building again, on the data the first one stored.
 */
const ROOT = join(import.meta.dirname, '../..');
const PASSWORD = 'a-long-quick-start-password';
const BROWSER_EMAIL = 'new-user@example.com';
const BROWSER_PASSWORD = 'a passphrase typed into the form';
/** What scripts/build-if-stale.mjs (and the build under it) print when they build. */
const BUILD_LINE = /^.*\b(re)?building\b.*$/im;

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
  for (const name of ['PATH', 'HOME', 'TMPDIR', 'LANG', 'npm_config_cache'])
    if (process.env[name] !== undefined) env[name] = process.env[name];
  return env;
}

/** The README's server block, in its own shell and process group (bash, npm, the build, the gateway). */
interface ServerShell {
  child: ChildProcess;
  /** Everything it printed so far, stdout and stderr interleaved. */
  output(): string;
  /** Resolves with the output once the banner names the dashboard; rejects if the shell exits first. */
  banner: Promise<string>;
  /** SIGTERM to the whole group, resolving once every process of it has exited (SIGKILL after 30 s). */
  stop(): Promise<void>;
}

function startServerShell(cwd: string, script: string): ServerShell {
  const child = spawn('bash', ['-c', script], {
    cwd,
    env: cleanEnvironment(),
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const banner = Promise.race([
    (async () => {
      while (!/dashboard: http/.test(output)) await new Promise((resolve) => setTimeout(resolve, 100));
      return output;
    })(),
    exited.then((code) => {
      throw new Error(`npm start exited (${code}) before listening:\n${output}`);
    }),
  ]);
  // Observed here so a shell that exits after the test has stopped waiting is no unhandled rejection.
  banner.catch(() => undefined);
  const groupAlive = () => {
    try {
      process.kill(-child.pid!, 0);
      return true;
    } catch {
      return false;
    }
  };
  return {
    child,
    output: () => output,
    banner,
    async stop() {
      if (child.pid === undefined || !groupAlive()) return;
      process.kill(-child.pid, 'SIGTERM');
      const deadline = Date.now() + 30_000;
      // The gateway may outlive npm by its graceful shutdown: wait for the last one, so the next start finds the
      // database and the port free.
      while (groupAlive()) {
        if (Date.now() > deadline) process.kill(-child.pid, 'SIGKILL');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
  };
}

/**
 * Opens a dashboard page and waits for either its form or the notice the dashboard shows when its first API call
 * fails, failing on the notice at once with its text instead of after a timeout on a form that never comes.
 */
async function openDashboard(page: Page, url: string, heading: string, serverErrors: string[]): Promise<void> {
  await page.goto(url);
  const unreachable = page.getByText('could not reach the server');
  await page.getByRole('heading', { name: heading }).or(unreachable).waitFor();
  expect(await unreachable.count(), `${await page.locator('body').innerText()}\n${serverErrors.join('\n')}`).toBe(0);
}

/** The Usage page's row for the request to `model`, clicking Refresh until the gateway has recorded it. */
async function usageRow(page: Page, model: string) {
  const row = page
    .getByRole('table', { name: 'Recent requests' })
    .getByRole('row', { name: new RegExp(model.replaceAll('.', '\\.')) });
  for (let attempt = 0; attempt < 20; attempt++) {
    if (await row.isVisible()) return row;
    await row.waitFor({ timeout: 1_000 }).catch(() => page.getByRole('button', { name: 'Refresh' }).click());
  }
  await row.waitFor();
  return row;
}

describe('README quick start', () => {
  let clone: string | undefined;
  let serverBlock: string[] = [];
  let first: ServerShell | undefined;
  let second: ServerShell | undefined;
  let port = 0;
  let browser: BrowserSession | undefined;
  let page: Page | undefined;
  /** Every response the dashboard got with a 5xx status, from any page it loaded. */
  const serverErrors: string[] = [];

  /** The server block with the README's port replaced by `onPort`. */
  const serverScript = (onPort: number) =>
    serverBlock
      .filter((line) => line !== 'npm ci')
      .map((line) => line.replaceAll('8080', String(onPort)))
      .join('\n');

  afterAll(async () => {
    await browser?.close();
    await first?.stop();
    await second?.stop();
    if (clone !== undefined) rmSync(clone, { recursive: true, force: true });
  });

  it('works as written on a fresh checkout: banner with the dashboard URL, account, key, a chat completion', async () => {
    serverBlock = readmeBlock('server');
    const clientLines = readmeBlock('client');
    expect(serverBlock[0]).toBe('npm ci');
    expect(serverBlock.some((line) => /^PORT=8080 npm start$/.test(line))).toBe(true);
    // One name for the key everywhere: the README sets the variable it then uses.
    expect(clientLines.join('\n')).toContain('export TOLLGATE_API_KEY=');
    expect(clientLines.join('\n')).toContain('$TOLLGATE_API_KEY');
    expect(readFileSync(join(ROOT, 'README.md'), 'utf8')).not.toMatch(/\$TOLLGATE_KEY\b/);

    clone = mkdtempSync(join(tmpdir(), 'tollgate-quick-start-'));
    const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' })
      .split('\0')
      .filter((path) => path !== '');
    for (const path of tracked) {
      if (!existsSync(join(ROOT, path))) continue; // deleted in the working tree, not committed yet
      mkdirSync(dirname(join(clone, path)), { recursive: true });
      cpSync(join(ROOT, path), join(clone, path));
    }
    symlinkSync(realpathSync(join(ROOT, 'node_modules')), join(clone, 'node_modules'));
    expect(existsSync(join(clone, 'data'))).toBe(false);
    expect(existsSync(join(clone, 'dist'))).toBe(false);

    port = await freePort();
    const started = performance.now();
    first = startServerShell(clone, serverScript(port));
    // It builds first (tsc and the dashboard), which takes a while on a busy machine.
    const banner = await first.banner;
    console.log(`first npm start (with the build): listening after ${Math.round(performance.now() - started)} ms`);
    expect(banner).toMatch(/^Building Tollgate \(first start\)/m);
    expect(banner).toContain(`dashboard: http://localhost:${port}/`);
    expect(banner).toContain('TOLLGATE_API_KEY');
    const home = await fetch(`http://localhost:${port}/`);
    expect(home.status).toBe(200);
    expect(await home.text()).toContain('<div id="root">');

    // The client block in its own shell (the "other terminal"), the password arriving on stdin as a person types it.
    const onPort = (line: string) => line.replaceAll('8080', String(port));
    const client = spawn('bash', ['-e', '-c', `${clientLines.map(onPort).join('\n')}\necho`], {
      cwd: clone,
      env: cleanEnvironment(),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
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
    const reply = JSON.parse(lines[lines.length - 1]!) as {
      object: string;
      choices: Array<{ message: { content: string } }>;
    };
    expect(reply.object).toBe('chat.completion');
    expect(reply.choices[0]!.message.content.length).toBeGreaterThan(0);
    // The fresh data directory was made by the start.
    expect(existsSync(join(clone, 'data', 'tollgate.db'))).toBe(true);
  }, 600_000);

  it('in Chromium, a new user registers, creates a key, calls the gateway with it and finds the call on the Usage page', async () => {
    expect(first, 'the first test started the gateway').toBeDefined();
    const dashboard = `http://localhost:${port}`;
    browser = await launchChromium(DESKTOP_VIEWPORT);
    page = await browser.context.newPage();
    page.on('response', (response) => {
      if (response.status() >= 500)
        serverErrors.push(`${response.status()} ${response.request().method()} ${response.url()}`);
    });

    await openDashboard(page, `${dashboard}/`, 'Log in', serverErrors);

    await page.getByRole('link', { name: 'Create an account' }).click();
    await page.getByRole('heading', { name: 'Create your account' }).waitFor();
    await page.getByLabel('Email').fill(BROWSER_EMAIL);
    await page.getByLabel('Password', { exact: true }).fill(BROWSER_PASSWORD);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    await page.getByText(`Signed in as ${BROWSER_EMAIL}`).waitFor();

    await openNav(page, 'API keys');
    const secret = await createKey(page, 'quick start');
    expect(secret).toMatch(/^sk-tg-/);

    const sdk = new OpenAI({ apiKey: secret, baseURL: `${dashboard}/v1`, maxRetries: 0 });
    const completion = await sdk.chat.completions.create({
      model: 'beta-5.4',
      messages: [{ role: 'user', content: 'Hello from the quick start' }],
    });
    expect(completion.choices[0]?.message.content).toBeTruthy();
    const usage = completion.usage!;
    expect(usage.prompt_tokens).toBeGreaterThan(0);
    expect(usage.completion_tokens).toBeGreaterThan(0);

    await openNav(page, 'Usage');
    const row = await usageRow(page, 'beta-5.4');
    // Time, Model, Key, In, Out, …: the request as the user made it, with the tokens the API answered.
    const cells = await row.getByRole('cell').allInnerTexts();
    expect(cells[1]).toContain('beta-5.4');
    expect(cells[2]).toBe('quick start');
    expect(cells[3]).toBe(formatCount(usage.prompt_tokens));
    expect(cells[4]).toBe(formatCount(usage.completion_tokens));
    await screenshot(page, 'quick-start-usage');

    expect(await page.getByText('could not reach the server').count()).toBe(0);
    expect(await page.getByRole('alert').allInnerTexts()).toEqual([]);
    expect(serverErrors).toEqual([]);
  }, 120_000);

  it('starts again in the same clone without building, listening on the data of the first run', async () => {
    expect(page, 'the browser test ran').toBeDefined();
    await first!.stop();
    // A port of its own: the first one's may linger in TIME_WAIT, and nothing here is about reusing it.
    port = await freePort();
    const started = performance.now();
    second = startServerShell(clone!, serverScript(port));
    const banner = await second.banner;
    console.log(`second npm start (no build expected): listening after ${Math.round(performance.now() - started)} ms`);
    expect(banner).toContain(`dashboard: http://localhost:${port}/`);
    expect(BUILD_LINE.exec(second.output())?.[0]).toBeUndefined();

    // The account registered in Chromium logs in on the new process (a fresh session: no cookie carried over), and
    // its request is still on the Usage page.
    await browser!.context.clearCookies();
    await openDashboard(page!, `http://localhost:${port}/login`, 'Log in', serverErrors);
    await logIn(page!, `http://localhost:${port}`, BROWSER_EMAIL, BROWSER_PASSWORD);
    await openNav(page!, 'Usage');
    await usageRow(page!, 'beta-5.4');
    expect(await page!.getByRole('alert').allInnerTexts()).toEqual([]);
    expect(serverErrors).toEqual([]);
  }, 120_000);
});
