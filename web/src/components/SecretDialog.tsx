import { CopyButton } from './CopyButton';
import { Dialog } from './Dialog';

/** The only place a full key is ever shown: once, right after creation or rotation. */
export function SecretDialog({
  secret,
  keyName,
  rotated,
  onClose,
}: {
  secret: string | null;
  keyName: string;
  rotated: boolean;
  onClose: () => void;
}) {
  return (
    <Dialog
      title={rotated ? 'Key rotated: save your new key' : 'Save your key'}
      open={secret !== null}
      onClose={onClose}
      actions={
        <button type="button" className="button button-primary" onClick={onClose}>
          Done
        </button>
      }
    >
      <p>
        Your new key <strong>{keyName}</strong>
        {rotated ? ' replaces the old one, which no longer works.' : ' is ready.'}
      </p>
      <div className="notice notice-warning" role="note">
        This key will not be shown again. Copy it now and store it somewhere safe, such as a secret manager or an
        environment variable.
      </div>
      <div className="secret-row">
        <input
          className="input secret"
          aria-label="Your new API key"
          readOnly
          value={secret ?? ''}
          onFocus={(event) => event.target.select()}
        />
        <CopyButton text={secret ?? ''} />
      </div>
    </Dialog>
  );
}
