// Bundles the compiled gateway (dist/src, from tsc) into dist/bundle: what `npm start`, the `tollgate` bin, the
// Docker image, the end-to-end tests and the bench run.
//
// Why a bundle: V8 keeps the source text of every module it loads, and a module record, scope and function
// stubs per module. The gateway loads ~330 CommonJS and as many ES modules (zod alone loads its 64 locales),
// and an idle gateway held ~6 MB of source strings. One bundle with whitespace and syntax minified (identifiers
// kept, so stack traces and profiles still name functions): idle VmRSS 82-84 -> ~70 MB, measured 12 s after start
// on this machine (full minification saved only 1.5 MB more, at the cost of those names).
//
// Dynamic imports stay dynamic (chunks, --splitting): what a configuration does not use is still not loaded.
// External, loaded from node_modules as before: better-sqlite3 (native), and the large optional modules that
// are only imported when configured (pg, ioredis, stripe, the tokenizer's tables). Modules the gateway loads
// through createRequire (undici's pool, fastify's schema compilers, yaml) are not followed by esbuild and load
// from node_modules too.
import { rmSync } from 'node:fs';
import { build } from 'esbuild';

// Chunk names carry content hashes: clear out the last build's rather than let them pile up.
rmSync('dist/bundle', { recursive: true, force: true });
await build({
  entryPoints: ['dist/src/cli.js'],
  outdir: 'dist/bundle',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  minifyWhitespace: true,
  minifySyntax: true,
  // Maps for operators who run with --enable-source-maps; Node reads them only then.
  sourcemap: true,
  external: ['better-sqlite3', 'pg', 'ioredis', 'stripe', 'gpt-tokenizer'],
  // CommonJS dependencies inside an ES module bundle call require() for Node's built-ins.
  banner: { js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);" },
  logLevel: 'warning',
});
