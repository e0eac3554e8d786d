/** A mistake in how a command was called: reported with the usage text. */
export class UsageError extends Error {
  override name = 'UsageError';

  /** The exit code: 1 by default; `ledger reconcile` exits 2 so a script tells a bad call from a flagged ledger. */
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}
