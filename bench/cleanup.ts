/**
 * Everything the bench must undo however it ends (normal end, error, Ctrl-C, SIGTERM): child processes,
 * client pools and the temp directory. `process.on('exit')` is the last resort, where only synchronous
 * work runs, so children are SIGKILLed and the directory removed there if nothing did it before.
 */
import { rmSync } from 'node:fs';
import type { ManagedProcess } from './processes.js';

export class Cleanup {
  private readonly processes: ManagedProcess[] = [];
  private readonly closers: (() => Promise<void>)[] = [];
  private directory: string | undefined;
  private running: Promise<void> | undefined;

  constructor() {
    process.on('exit', () => this.runNow());
  }

  removeDirectory(path: string): void {
    this.directory = path;
  }

  stopProcess(child: ManagedProcess): void {
    this.processes.push(child);
  }

  closeLater(close: () => Promise<void>): void {
    this.closers.push(close);
  }

  /** Runs once; later calls wait for the first. */
  run(): Promise<void> {
    this.running ??= this.runOnce();
    return this.running;
  }

  private async runOnce(): Promise<void> {
    await Promise.allSettled(this.closers.map((close) => close()));
    // Gateway first: its graceful shutdown may still talk to the simulator.
    for (const child of [...this.processes].reverse()) await child.stop().catch(() => child.killNow());
    this.removeDirectoryNow();
  }

  private runNow(): void {
    for (const child of this.processes) child.killNow();
    this.removeDirectoryNow();
  }

  private removeDirectoryNow(): void {
    if (this.directory === undefined) return;
    rmSync(this.directory, { recursive: true, force: true });
    this.directory = undefined;
  }
}
