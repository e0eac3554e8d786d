import { identity } from '../../api/identity';
import type { AdminAccount } from '../../api/types';

/**
 * What the operator does for a person when mail does not reach them: vouch for their address, or make a
 * password reset link to pass on by other means (shown once in the message).
 */
export function IdentityActions({
  account,
  onMessage,
}: {
  account: AdminAccount;
  onMessage: (message: { kind: 'success' | 'error'; text: string }) => void;
}) {
  async function run(work: () => Promise<string>) {
    try {
      onMessage({ kind: 'success', text: await work() });
    } catch (reason) {
      onMessage({ kind: 'error', text: (reason as Error).message });
    }
  }
  return (
    <>
      <button
        type="button"
        className="button button-secondary button-small"
        aria-label={`Verify email of ${account.email}`}
        onClick={() =>
          void run(async () => {
            await identity.operatorVerify(account.id);
            return `${account.email} is verified.`;
          })
        }
      >
        Verify email
      </button>
      {!account.disabled && (
        <button
          type="button"
          className="button button-secondary button-small"
          aria-label={`Reset link for ${account.email}`}
          onClick={() =>
            void run(async () => {
              const link = await identity.operatorResetLink(account.id);
              const url = link.url ?? `${window.location.origin}${link.path}`;
              return `Reset link for ${account.email} (works once, for an hour): ${url}`;
            })
          }
        >
          Reset link
        </button>
      )}
    </>
  );
}
