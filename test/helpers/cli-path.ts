import { join } from 'node:path';

/** The built CLI as it ships: what `npm start`, the `tollgate` bin and the Docker image run (tsc's output). */
export const BUILT_CLI = join(import.meta.dirname, '../../dist/src/cli.js');
