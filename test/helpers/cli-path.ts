import { join } from 'node:path';

/** The built CLI as it ships: the bundle `npm run build` writes (scripts/bundle-server.mjs). */
export const BUILT_CLI = join(import.meta.dirname, '../../dist/bundle/cli.js');
