#!/usr/bin/env node
// The CLI entry point. Sizing V8's new space for start-up has to happen before the CLI's ~400 modules load:
// loading them is what grows it (see startup-heap.ts). So that module first, statically, and the rest after; before
// it only the re-execution of `serve` with glibc's malloc settings (glibc-malloc.ts), which must precede all loading.
import './glibc-malloc-reexec.js';
import './startup-heap.js';

await import('./cli-main.js');
