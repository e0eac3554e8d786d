// Imported first by the CLI entry point: `serve` starts again, in place, with glibc's malloc settings (glibc-malloc.ts).
import { mallocReexecEnvironment } from './glibc-malloc.js';

const reexecEnv = mallocReexecEnvironment(
  process.argv,
  process.env,
  process.platform,
  typeof process.execve === 'function',
);
if (reexecEnv !== undefined) {
  process.execve!(process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], reexecEnv);
}
