import { useEffect, useState, type FormEvent } from 'react';
import { signInPolicy as policyApi, type SignInPolicy } from '../api/organisations';
import { useAsync } from '../lib/use-async';
import { ErrorNotice, Loading, Notice } from './Notice';

/**
 * How members must sign in to reach the organisation: a second factor, single sign-on through named providers.
 * Everyone sees it; only an owner changes it (the server refuses anyone else, and a rule the owner's own session
 * does not meet).
 */
export function SignInPolicySettings({ isOwner, onChanged }: { isOwner: boolean; onChanged: () => void }) {
  const current = useAsync(() => policyApi.get(), []);
  const [draft, setDraft] = useState<SignInPolicy>();
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ kind: 'success' | 'error'; text: string }>();

  useEffect(() => {
    if (current.data !== undefined) setDraft(current.data.policy);
  }, [current.data]);

  async function save(event: FormEvent) {
    event.preventDefault();
    if (draft === undefined) return;
    setBusy(true);
    setResult(undefined);
    try {
      const saved = await policyApi.set(draft);
      setDraft(saved.policy);
      setResult({ kind: 'success', text: 'The sign-in requirements are saved. They apply to every member at once.' });
      onChanged();
    } catch (reason) {
      setResult({ kind: 'error', text: (reason as Error).message });
    } finally {
      setBusy(false);
    }
  }

  const providers = current.data?.providers ?? [];
  const nameOf = (id: string) => providers.find((provider) => provider.id === id)?.name ?? id;
  return (
    <section className="card section" aria-labelledby="sign-in-policy-heading">
      <h2 id="sign-in-policy-heading">Sign-in requirements</h2>
      <ErrorNotice error={current.error} />
      {current.loading && draft === undefined && <Loading />}
      {draft !== undefined && !isOwner && (
        <p className="muted">
          {draft.requireSecondFactor ? 'Members need two-step sign-in.' : 'Members may sign in with a password alone.'}{' '}
          {draft.requiredSsoProviders.length > 0 &&
            `Only sessions started with ${draft.requiredSsoProviders.map(nameOf).join(' or ')} reach this organisation. `}
          Only an owner changes this.
        </p>
      )}
      {draft !== undefined && isOwner && (
        <form onSubmit={save} className="stack">
          <label className="checkbox-row">
            <input
              type="checkbox"
              checked={draft.requireSecondFactor}
              onChange={(event) => setDraft({ ...draft, requireSecondFactor: event.target.checked })}
            />
            <span>
              Require two-step sign-in: members need an authenticator app or a passkey, and must use it when they sign
              in (single sign-on counts).
            </span>
          </label>
          {providers.map((provider) => (
            <label className="checkbox-row" key={provider.id}>
              <input
                type="checkbox"
                checked={draft.requiredSsoProviders.includes(provider.id)}
                onChange={(event) =>
                  setDraft({
                    ...draft,
                    requiredSsoProviders: event.target.checked
                      ? [...draft.requiredSsoProviders, provider.id]
                      : draft.requiredSsoProviders.filter((id) => id !== provider.id),
                  })
                }
              />
              <span>Require sign-in with {provider.name}: other sessions cannot reach this organisation.</span>
            </label>
          ))}
          <div>
            <button type="submit" className="button button-primary" disabled={busy}>
              {busy ? 'Saving…' : 'Save requirements'}
            </button>
          </div>
          {result !== undefined && <Notice kind={result.kind}>{result.text}</Notice>}
        </form>
      )}
    </section>
  );
}
