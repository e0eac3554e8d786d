/**
 * A gateway serving a SQLite file owns it: its live holds are in its memory (memory-hold-book.ts), so a second
 * gateway on the same file would admit against money the first one holds. The owner keeps a lock beside the file
 * (proper-lockfile, as the settlement journal does: a `<file>.lock` directory whose mtime the owner refreshes), and
 * a second gateway refuses to start. CLI admin commands open the file without it: they never hold.
 */

/** A lock not refreshed for this long belongs to a dead process (SIGKILL leaves it behind). */
const STALE_MS = 5_000;
const REFRESH_MS = 1_000;
/** How long a starting gateway waits for a dead owner's lock to go stale before refusing. */
const WAIT_FOR_STALE_MS = STALE_MS + 2 * REFRESH_MS;

export class DatabaseInUse extends Error {}

/** Takes the file's lock, waiting out a dead owner's; resolves with its release. */
export async function lockDatabaseFile(filename: string, onLost: (error: Error) => void): Promise<() => Promise<void>> {
  const { lock } = await import('proper-lockfile');
  try {
    return await lock(filename, {
      realpath: false,
      stale: STALE_MS,
      update: REFRESH_MS,
      retries: { retries: WAIT_FOR_STALE_MS / REFRESH_MS, factor: 1, minTimeout: REFRESH_MS, maxTimeout: REFRESH_MS },
      onCompromised: onLost,
    });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ELOCKED') throw error;
    throw new DatabaseInUse(
      `${filename} is served by another gateway (its lock ${filename}.lock is held and kept fresh). An embedded SQLite database is served by one gateway process: stop the other one, or move to PostgreSQL to run several instances.`,
      { cause: error },
    );
  }
}
