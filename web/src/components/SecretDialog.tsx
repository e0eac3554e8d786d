import { useEffect, useState } from 'react';
import { quickStartSamples } from '../lib/quick-start';
import { CodeTabs } from './CodeTabs';
import { CopyButton } from './CopyButton';
import { Dialog } from './Dialog';

/**
 * The only place a full key is ever shown: once, right after creation or rotation. Until the key (or a sample that
 * holds it) is copied, Escape or a click outside asks first: a key closed by a stray key press is lost. Done is
 * the user's own deliberate choice and closes.
 */
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
  const [copied, setCopied] = useState(false);
  const [asking, setAsking] = useState(false);
  // biome-ignore lint/correctness/useExhaustiveDependencies: a new secret is the trigger: nothing of it is copied yet.
  useEffect(() => {
    setCopied(false);
    setAsking(false);
  }, [secret]);

  function closeRequested(): boolean {
    if (copied) return true;
    setAsking(true);
    return false;
  }

  // The dashboard is served by the gateway: the page's own origin is where clients reach it.
  const samples = secret === null ? [] : quickStartSamples(window.location.origin, undefined, secret);
  return (
    <Dialog
      title={rotated ? 'Key rotated: save your new key' : 'Save your key'}
      open={secret !== null}
      onClose={onClose}
      onCloseRequest={closeRequested}
      actions={
        asking ? (
          <>
            <button type="button" className="button button-secondary" onClick={onClose}>
              Close without copying
            </button>
            {/* biome-ignore lint/a11y/noAutofocus: the safe choice takes focus when the question appears. */}
            <button type="button" className="button button-primary" autoFocus onClick={() => setAsking(false)}>
              Keep it open
            </button>
          </>
        ) : (
          <button type="button" className="button button-primary" onClick={onClose}>
            Done
          </button>
        )
      }
    >
      <p>
        Your new key <strong>{keyName}</strong>
        {rotated ? ' replaces the old one, which no longer works.' : ' is ready.'}
      </p>
      {asking ? (
        <div className="notice notice-error" role="alert">
          You have not copied this key. Once this window closes it cannot be shown again: you would have to create a new
          one.
        </div>
      ) : (
        <div className="notice notice-warning" role="note">
          This key will not be shown again. Copy it now and store it somewhere safe, such as a secret manager or an
          environment variable.
        </div>
      )}
      <div className="secret-row">
        <input
          className="input secret"
          aria-label="Your new API key"
          readOnly
          value={secret ?? ''}
          onFocus={(event) => event.target.select()}
          onCopy={() => setCopied(true)}
        />
        <CopyButton text={secret ?? ''} onCopied={() => setCopied(true)} />
      </div>
      {secret !== null && (
        <details className="secret-samples">
          <summary>Try it: samples with this key filled in</summary>
          <CodeTabs label="Samples with the new key" samples={samples} onCopied={() => setCopied(true)} />
        </details>
      )}
    </Dialog>
  );
}
