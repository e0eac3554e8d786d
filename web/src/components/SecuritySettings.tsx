import { startRegistration } from '@simplewebauthn/browser';
import { useCallback, useEffect, useState, type FormEvent } from 'react';
import { identity, type SecuritySettings as Settings } from '../api/identity';
import { formatDate } from '../lib/format';
import { Field } from './Field';
import { ErrorNotice, Loading, Notice } from './Notice';

/** The ten recovery codes, shown once right after they are made. */
function RecoveryCodes({ codes }: { codes: string[] }) {
  return (
    <Notice kind="warning">
      <p>
        Keep these recovery codes somewhere safe. Each signs in once if you lose your authenticator app. They are not
        shown again.
      </p>
      <ul className="recovery-codes" aria-label="Recovery codes">
        {codes.map((code) => (
          <li key={code}>{code}</li>
        ))}
      </ul>
    </Notice>
  );
}

function TotpSection({ settings, reload }: { settings: Settings; reload: () => void }) {
  const [enrolment, setEnrolment] = useState<{ secret: string; qrCodeDataUrl: string }>();
  const [code, setCode] = useState('');
  const [password, setPassword] = useState('');
  const [codes, setCodes] = useState<string[]>();
  const [error, setError] = useState<Error>();
  const [busy, setBusy] = useState(false);

  async function run(action: () => Promise<void>) {
    setBusy(true);
    setError(undefined);
    try {
      await action();
    } catch (reason) {
      setError(reason as Error);
    } finally {
      setBusy(false);
    }
  }

  const confirm = (event: FormEvent) => {
    event.preventDefault();
    void run(async () => {
      const reply = await identity.confirmTotp(code.replace(/\s/g, ''));
      setCodes(reply.recoveryCodes);
      setEnrolment(undefined);
      setCode('');
      reload();
    });
  };
  const disable = (event: FormEvent) => {
    event.preventDefault();
    void run(async () => {
      await identity.disableTotp(password, code.replace(/\s/g, ''));
      setPassword('');
      setCode('');
      setCodes(undefined);
      reload();
    });
  };
  const regenerate = () =>
    run(async () => {
      setCodes((await identity.newRecoveryCodes(code.replace(/\s/g, ''))).recoveryCodes);
      setCode('');
      reload();
    });

  return (
    <section className="card section" id="security" aria-labelledby="totp-heading">
      <h2 id="totp-heading">Authenticator app</h2>
      {codes !== undefined && <RecoveryCodes codes={codes} />}
      {!settings.totp.enabled && enrolment === undefined && (
        <>
          <p className="muted">Ask for a code from an authenticator app after your password.</p>
          <ErrorNotice error={error} />
          <button
            type="button"
            className="button button-primary"
            disabled={busy}
            onClick={() => run(async () => setEnrolment(await identity.beginTotp()))}
          >
            Set up an authenticator app
          </button>
        </>
      )}
      {enrolment !== undefined && (
        <form onSubmit={confirm} className="narrow-form">
          <p>Scan this QR code with your authenticator app, then enter the code it shows.</p>
          <img className="totp-qr" src={enrolment.qrCodeDataUrl} alt="QR code for your authenticator app" />
          <p>
            Or type this key: <code data-totp-secret>{enrolment.secret}</code>
          </p>
          <Field
            label="Code from the app"
            autoComplete="one-time-code"
            inputMode="numeric"
            required
            maxLength={7}
            value={code}
            onChange={(event) => setCode(event.target.value)}
            error={error?.message}
          />
          <button type="submit" className="button button-primary" disabled={busy}>
            Turn on
          </button>
        </form>
      )}
      {settings.totp.enabled && (
        <form onSubmit={disable} className="narrow-form">
          <p>
            On. Recovery codes left: <strong>{settings.totp.recoveryCodesLeft}</strong>
          </p>
          <Field
            label="Code from the app (or a recovery code)"
            autoComplete="one-time-code"
            required
            maxLength={20}
            value={code}
            onChange={(event) => setCode(event.target.value)}
          />
          <Field
            label="Password (to turn off)"
            type="password"
            autoComplete="current-password"
            value={password}
            onChange={(event) => setPassword(event.target.value)}
          />
          <ErrorNotice error={error} />
          <div className="form-row">
            <button type="button" className="button button-secondary" disabled={busy} onClick={regenerate}>
              New recovery codes
            </button>
            <button type="submit" className="button button-danger-outline" disabled={busy || password === ''}>
              Turn off
            </button>
          </div>
        </form>
      )}
    </section>
  );
}

function PasskeySection({ settings, reload }: { settings: Settings; reload: () => void }) {
  const [name, setName] = useState('');
  const [error, setError] = useState<Error>();
  const [busy, setBusy] = useState(false);

  async function run(action: () => Promise<unknown>) {
    setBusy(true);
    setError(undefined);
    try {
      await action();
      reload();
    } catch (reason) {
      setError(reason as Error);
    } finally {
      setBusy(false);
    }
  }

  const add = (event: FormEvent) => {
    event.preventDefault();
    void run(async () => {
      const { token, options } = await identity.passkeyRegistrationOptions();
      const response = await startRegistration({ optionsJSON: options });
      await identity.registerPasskey(token, response, name.trim());
      setName('');
    });
  };

  return (
    <section className="card section" aria-labelledby="passkeys-heading">
      <h2 id="passkeys-heading">Passkeys</h2>
      <p className="muted">Sign in with a passkey instead of a password, or use one as the second step.</p>
      {settings.passkeys.length > 0 && (
        <ul className="passkey-list" aria-label="Your passkeys">
          {settings.passkeys.map((passkey) => (
            <li key={passkey.id}>
              <span className="passkey-name">
                {passkey.name}{' '}
                <span className="muted">
                  added {formatDate(passkey.createdAt)}
                  {passkey.lastUsedAt !== null && `, last used ${formatDate(passkey.lastUsedAt)}`}
                </span>
              </span>
              <button
                type="button"
                className="button button-secondary button-small"
                disabled={busy}
                aria-label={`Rename ${passkey.name}`}
                onClick={() => {
                  const next = window.prompt('New name for this passkey', passkey.name);
                  if (next !== null && next.trim() !== '')
                    void run(() => identity.renamePasskey(passkey.id, next.trim()));
                }}
              >
                Rename
              </button>
              <button
                type="button"
                className="button button-danger-outline button-small"
                disabled={busy}
                aria-label={`Remove ${passkey.name}`}
                onClick={() => void run(() => identity.removePasskey(passkey.id))}
              >
                Remove
              </button>
            </li>
          ))}
        </ul>
      )}
      <form onSubmit={add} className="narrow-form">
        <Field
          label="Passkey name"
          required
          maxLength={60}
          placeholder="Work laptop"
          value={name}
          onChange={(event) => setName(event.target.value)}
        />
        <ErrorNotice error={error} />
        <button type="submit" className="button button-primary" disabled={busy}>
          Add a passkey
        </button>
      </form>
    </section>
  );
}

/** Second factors and passkeys of the signed-in account, on the settings page. */
export function SecuritySettings() {
  const [settings, setSettings] = useState<Settings>();
  const [error, setError] = useState<Error>();
  const reload = useCallback(() => {
    identity.security().then(setSettings, setError);
  }, []);
  useEffect(reload, [reload]);
  if (settings === undefined) return error === undefined ? <Loading /> : <ErrorNotice error={error} />;
  return (
    <>
      <TotpSection settings={settings} reload={reload} />
      <PasskeySection settings={settings} reload={reload} />
    </>
  );
}
