/**
 * Makes files refuse every write, for real, even to a process that already has them open: the Linux immutable
 * attribute (`chattr +i`). Tests run as root, and root ignores permission bits, so `chmod` would change nothing;
 * a read-only bind or loop mount needs mount privileges a test cannot count on; a directory swap changes nothing
 * for open descriptors. An immutable file makes write(2) fail with EPERM on the descriptors SQLite already holds
 * (kernel ≥ 5.x checks it on every write), so SQLite reports SQLITE_IOERR_WRITE exactly as on a failing disk, and
 * it recovers once the attribute is cleared. Needs a file system with the attribute (ext4, xfs, btrfs, tmpfs since
 * Linux 6.0); `makeImmutable` checks that it took and fails the test otherwise.
 *
 * Never for SQLite's `-shm` file: SQLite maps it into memory, and a store into a mapped immutable page is a
 * SIGBUS that kills the process, not an error it could report.
 */
import { execFile } from 'node:child_process';
import { appendFile } from 'node:fs/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);

export async function makeImmutable(paths: readonly string[]): Promise<void> {
  await run('chattr', ['+i', ...paths]);
  for (const path of paths) {
    // Opening for append is refused on an immutable file (EPERM), for root too.
    const refused = await appendFile(path, '').then(
      () => false,
      (error: NodeJS.ErrnoException) => error.code === 'EPERM',
    );
    if (!refused)
      throw new Error(`chattr +i did not make ${path} refuse writes: this file system lacks the immutable attribute.`);
  }
}

export async function makeWritable(paths: readonly string[]): Promise<void> {
  if (paths.length > 0) await run('chattr', ['-i', ...paths]);
}
