// Builds the gateway (`npm run build`) only when its inputs changed since the last build, so a second `npm start`
// serves in about a second instead of recompiling the server and the dashboard.
//
// The inputs are hashed by content, not dated by mtime: a `git checkout` or a copy touches every mtime, and a
// stamp that trusts mtimes would rebuild for nothing (or, with a clock skew, not rebuild when it must). Hashing
// the ~700 files takes ~50 ms. Hand-written because it is a directory walk and a hash; a build tool that caches
// by content (turbo, nx) would be a large dependency for this one check.
import { createHash } from 'node:crypto';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
/** What the build reads: the server's and the dashboard's sources and every file that configures the build. */
const INPUTS = ['src', 'bench', 'web', 'scripts', 'package.json', 'package-lock.json', 'tsconfig.json'];
/** What the build writes; a build missing one of them is rebuilt whatever the stamp says. */
const OUTPUTS = ['dist/src/cli.js', 'dist/web/index.html'];
const STAMP = join(root, 'dist', '.build-inputs');
const SKIPPED_DIRECTORIES = new Set(['node_modules', 'dist']);
/** Files the build never reads: tests (tsconfig.json excludes them) and the bench's own results. */
const SKIPPED_FILES = /\.test(-child)?\.tsx?$/;
const SKIPPED_PATHS = ['bench/results/'];

/** The files under a directory (ENOTDIR for a plain file, which the caller takes as itself). */
function listFiles(path) {
  if (!existsSync(path)) return [];
  return readdirSync(path, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))
    .filter(
      (file) =>
        !relative(path, file)
          .split(/[\\/]/)
          .some((part) => SKIPPED_DIRECTORIES.has(part)),
    )
    .filter(
      (file) =>
        !SKIPPED_FILES.test(file) &&
        !SKIPPED_PATHS.some((skipped) => relative(root, file).replaceAll('\\', '/').startsWith(skipped)),
    );
}

function inputsHash() {
  const hash = createHash('sha256');
  for (const input of INPUTS) {
    const path = join(root, input);
    let files;
    try {
      files = listFiles(path);
    } catch (error) {
      if (error.code !== 'ENOTDIR') throw error;
      files = [path];
    }
    for (const file of files.sort()) {
      hash.update(relative(root, file)).update('\0').update(readFileSync(file)).update('\0');
    }
  }
  return hash.digest('hex');
}

/** The build, with its output on stderr: `npm run --silent tollgate -- keys create … | head -n 1` reads only the key. */
function runBuild() {
  return new Promise((resolve) => {
    const child = spawn('npm', ['run', '--silent', 'build'], {
      cwd: root,
      stdio: ['ignore', process.stderr, process.stderr],
      shell: process.platform === 'win32',
    });
    child.on('exit', (code) => resolve(code ?? 1));
  });
}

const upToDate = (hash) =>
  existsSync(STAMP) &&
  readFileSync(STAMP, 'utf8').trim() === hash &&
  OUTPUTS.every((output) => existsSync(join(root, output)));

const wanted = inputsHash();
if (upToDate(wanted)) process.exit(0);

// One build at a time in a checkout (`npm start` and `npm test` in two terminals): the second waits for the first,
// then finds the stamp current. proper-lockfile refreshes the lock while the build runs, so a crashed build's
// lock goes stale instead of blocking the next start forever.
mkdirSync(join(root, 'dist'), { recursive: true });
const { lock } = await import('proper-lockfile');
const release = await lock(join(root, 'dist'), {
  lockfilePath: join(root, 'dist', '.build.lock'),
  realpath: false,
  stale: 30_000,
  retries: { retries: 1_200, minTimeout: 500, maxTimeout: 500 },
});
let status = 0;
try {
  if (!upToDate(wanted)) {
    process.stderr.write(
      existsSync(STAMP) ? 'Sources changed since the last build: rebuilding…\n' : 'Building Tollgate (first start)…\n',
    );
    // tsc writes its output even when type checking fails: the old stamp must not vouch for what a failed build left.
    rmSync(STAMP, { force: true });
    status = await runBuild();
    // The build printed why it failed; no stack trace of this script on top of it.
    if (status === 0) writeFileSync(STAMP, `${wanted}\n`);
    else process.stderr.write('The build failed (see above).\n');
  }
} finally {
  await release();
}
process.exit(status);
