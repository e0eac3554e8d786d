import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
export const WEB_SOURCE = join(REPO, 'web');
export const WEB_BUILD = join(REPO, 'dist', 'web');

function newestModification(path: string): number {
  const info = statSync(path);
  if (!info.isDirectory()) return info.mtimeMs;
  let newest = info.mtimeMs;
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestModification(join(path, entry)));
  return newest;
}

/** True when dist/web is missing or older than any file of web/. */
export function webBuildIsStale(): boolean {
  const index = join(WEB_BUILD, 'index.html');
  if (!existsSync(index)) return true;
  // A build from before precompression (or by the bare Vite API) has no .br files: build again, as npm run build does.
  const assets = join(WEB_BUILD, 'assets');
  if (!existsSync(assets) || !readdirSync(assets).some((name) => name.endsWith('.js.br'))) return true;
  return newestModification(WEB_SOURCE) > statSync(index).mtimeMs;
}

/** Builds the SPA with Vite's JS API when the build output is missing or stale (`npm test` builds it anyway). */
export async function ensureWebBuild(): Promise<string> {
  if (webBuildIsStale()) {
    const { build } = await import('vite');
    // Vitest sets NODE_ENV=test, and Vite would then bundle React's development build: build as `npm run build` does.
    const previous = process.env.NODE_ENV;
    process.env.NODE_ENV = 'production';
    try {
      await build({ configFile: join(WEB_SOURCE, 'vite.config.ts'), mode: 'production', logLevel: 'warn' });
    } finally {
      process.env.NODE_ENV = previous;
    }
    execFileSync(process.execPath, [join(REPO, 'scripts', 'compress-web-assets.mjs')], { stdio: 'ignore' });
  }
  return WEB_BUILD;
}
