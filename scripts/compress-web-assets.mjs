// Precompresses the dashboard build (dist/web) once, at build time: beside each text file a `.br` (brotli, best
// quality) and a `.gz` (gzip -9), which the gateway serves through @fastify/static's `preCompressed` option, so no
// request spends CPU compressing. Hand-written on node:zlib because it is a dozen lines; a Vite plugin would be a
// dependency for the same two calls.
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const root = fileURLToPath(new URL('../dist/web/', import.meta.url));
const COMPRESSIBLE = /\.(js|mjs|css|html|svg|json|txt|map|ico)$/;
/** Smaller files gain nothing worth a second lookup. */
const MINIMUM_BYTES = 1024;

let files = 0;
let before = 0;
let afterBrotli = 0;
function walk(directory) {
  for (const name of readdirSync(directory)) {
    const path = join(directory, name);
    if (statSync(path).isDirectory()) {
      walk(path);
      continue;
    }
    if (!COMPRESSIBLE.test(name)) continue;
    const content = readFileSync(path);
    if (content.length < MINIMUM_BYTES) continue;
    const brotli = brotliCompressSync(content, {
      params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: content.length },
    });
    writeFileSync(`${path}.br`, brotli);
    writeFileSync(`${path}.gz`, gzipSync(content, { level: 9 }));
    files += 1;
    before += content.length;
    afterBrotli += brotli.length;
  }
}
walk(root);
console.log(
  `precompressed ${files} files: ${Math.round(before / 1024)} KB → ${Math.round(afterBrotli / 1024)} KB brotli`,
);
