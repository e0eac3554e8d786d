#!/usr/bin/env node
// The CLI entry point. Sizing V8's new space for start-up has to happen before the CLI's ~400 modules load:
// loading them is what grows it (see startup-heap.ts). So that module first, statically, and the rest after.
import './startup-heap.js';

await import('./cli-main.js');
