/** A mistake in how a command was called: reported with the usage text. */
export class UsageError extends Error {
  override name = 'UsageError';
}
