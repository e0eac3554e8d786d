// Builds the gateway (`npm run build`) only when its inputs changed since the last build, so a second `npm start`
// serves in about a second instead of recompiling the server and the dashboard.
//
// The inputs are hashed by content, not dated by mtime: a `git checkout` or a copy touches every mtime, and a
// stamp that trusts mtimes would rebuild for nothing (or, with a clock skew, not rebuild when it must). Hashing
// the ~700 files takes ~50 ms. Hand-written because it is a directory walk and a hash; a build tool that caches
// by content (turbo, nx) would be a large dependency for this one check.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
/** What the build reads: the server's and the dashboard's sources and every file that configures the build. */
const INPUTS = ['src', 'bench', 'web', 'scripts', 'package.json', 'package-lock.json', 'tsconfig.json'];
/** What the build writes; a build missing one of them is rebuilt whatever the stamp says. */
const OUTPUTS = ['dist/src/cli.js', 'dist/web/index.html'];
const STAMP = join(root, 'dist', '.build-inputs');
const SKIPPED_DIRECTORIES = new Set(['node_modules', 'dist']);

/** The files under a directory (ENOTDIR for a plain file, which the caller takes as itself). */
function listFiles(path) {
  if (!existsSync(path)) return [];
  return readdirSync(path, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))
    .filter((file) => !relative(path, file).split(/[\\/]/).some((part) => SKIPPED_DIRECTORIES.has(part)));
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

const wanted = inputsHash();
const built = existsSync(STAMP) ? readFileSync(STAMP, 'utf8').trim() : undefined;
if (built === wanted && OUTPUTS.every((output) => existsSync(join(root, output)))) process.exit(0);

// Everything on stderr: `npm run --silent tollgate -- keys create … | head -n 1` must read only the key.
process.stderr.write(built === undefined ? 'Building Tollgate (first start)…\n' : 'Sources changed since the last build: rebuilding…\n');
// tsc writes its output even when type checking fails: the old stamp must not vouch for what a failed build left.
rmSync(STAMP, { force: true });
try {
  execFileSync(process.platform === 'win32' ? 'npm.cmd' : 'npm', ['run', '--silent', 'build'], { cwd: root, stdio: ['ignore', process.stderr, process.stderr] });
} catch (error) {
  // The build printed why; no stack trace of this script on top of it.
  process.stderr.write('The build failed (see above).\n');
  process.exit(error.status ?? 1);
}
writeFileSync(STAMP, `${wanted}\n`);
