import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

const webRoot = fileURLToPath(new URL('.', import.meta.url));

/** The dashboard SPA: built into dist/web (beside the compiled server in dist/src), served by the gateway at `/`. */
export default defineConfig({
  root: webRoot,
  base: '/',
  plugins: [react()],
  build: {
    outDir: fileURLToPath(new URL('../dist/web', import.meta.url)),
    emptyOutDir: true,
    // Everything ships in the build: no CDN, no external fonts.
    assetsInlineLimit: 0,
    chunkSizeWarningLimit: 700,
    rollupOptions: {
      output: {
        // React in its own long-cached chunk. The chart library (the only heavy dependency) is loaded lazily
        // by the pages that draw charts, so the log-in page never downloads it.
        manualChunks(id) {
          if (/[\\/]node_modules[\\/](react|react-dom|scheduler)[\\/]/.test(id)) return 'react';
          return undefined;
        },
      },
    },
  },
  server: {
    // `npx vite --config web/vite.config.ts` during development: the gateway on :8080 answers the API.
    proxy: { '/api': 'http://127.0.0.1:8080', '/v1': 'http://127.0.0.1:8080' },
  },
});
