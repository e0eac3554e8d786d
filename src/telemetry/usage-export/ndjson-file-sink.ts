import { mkdir, open, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { UsageEvent } from './usage-event.js';
import type { UsageSink } from './usage-sink.js';

/** `usage-YYYY-MM-DD.ndjson`, the UTC day the lines were written. */
export function ndjsonFileName(at: number): string {
  return `usage-${new Date(at).toISOString().slice(0, 10)}.ndjson`;
}

/**
 * One JSON event per line, appended to a file per UTC day for a log shipper to tail. Each batch is written and
 * fsynced before `deliver` resolves, so the cursor never passes an event that is not on disk; a crash between the
 * fsync and the cursor's update writes that batch again (at least once: deduplicate by `request_id`).
 */
export class NdjsonFileSink implements UsageSink {
  readonly kind = 'ndjson';
  private file: { name: string; handle: FileHandle } | undefined;

  constructor(
    readonly name: string,
    private readonly directory: string,
    private readonly now: () => number = Date.now,
  ) {}

  async deliver(events: readonly UsageEvent[]): Promise<void> {
    if (events.length === 0) return;
    const handle = await this.handleFor(ndjsonFileName(this.now()));
    await handle.appendFile(events.map((event) => `${JSON.stringify(event)}\n`).join(''));
    await handle.datasync();
  }

  async close(): Promise<void> {
    const file = this.file;
    this.file = undefined;
    await file?.handle.close();
  }

  /** The day's file, opened for appending; yesterday's is closed when the day turns (rotation). */
  private async handleFor(name: string): Promise<FileHandle> {
    if (this.file?.name === name) return this.file.handle;
    await this.close();
    await mkdir(this.directory, { recursive: true });
    const handle = await open(join(this.directory, name), 'a', 0o640);
    this.file = { name, handle };
    // A new file's name lives in the directory: synced too, or a crash could lose the file with its fsynced lines.
    const directory = await open(this.directory, 'r');
    await directory.sync().finally(() => directory.close());
    return handle;
  }
}
