import { CopyButton } from '../CopyButton';

/**
 * The log-in answer for a disabled account (the password was right): what it means for the account's keys, and the
 * one thing its owner can do, which is to ask the operator; the button copies that request, ready to send.
 */
export function DisabledAccountBanner({ email }: { email: string }) {
  const request = `Please enable my Tollgate account again: ${email}. It was disabled, so I cannot sign in and its API keys get 401.`;
  return (
    <div className="refusal-banner" role="alert">
      <p>
        <strong>This account is disabled.</strong> It cannot sign in and its API keys get <code>401</code> until the
        operator of this gateway enables it again.
      </p>
      <CopyButton text={request} label="Copy a request for the operator" />
    </div>
  );
}
