import { useEffect, useState, type FormEvent } from 'react';
import { billingDetails } from '../api/endpoints';
import { Notice } from './Notice';

/** The name and address the organisation's receipts carry. */
export function BillingDetailsForm() {
  const [name, setName] = useState('');
  const [address, setAddress] = useState('');
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ kind: 'success' | 'error'; text: string }>();

  useEffect(() => {
    billingDetails.get().then(
      (details) => {
        setName(details.billingName ?? '');
        setAddress(details.billingAddress ?? '');
      },
      (reason: Error) => setResult({ kind: 'error', text: reason.message }),
    );
  }, []);

  async function submit(event: FormEvent) {
    event.preventDefault();
    setBusy(true);
    setResult(undefined);
    try {
      await billingDetails.set({ billingName: name, billingAddress: address });
      setResult({ kind: 'success', text: 'Saved: new receipts show these details.' });
    } catch (reason) {
      setResult({ kind: 'error', text: (reason as Error).message });
    } finally {
      setBusy(false);
    }
  }

  return (
    <form onSubmit={submit} className="stack">
      <div className="field">
        <label htmlFor="billing-name">Billing name</label>
        <input
          id="billing-name"
          className="input"
          maxLength={200}
          autoComplete="organization"
          value={name}
          onChange={(event) => setName(event.target.value)}
        />
      </div>
      <div className="field">
        <label htmlFor="billing-address">Billing address</label>
        <textarea
          id="billing-address"
          className="input"
          rows={4}
          maxLength={1000}
          autoComplete="street-address"
          value={address}
          onChange={(event) => setAddress(event.target.value)}
        />
      </div>
      <div>
        <button type="submit" className="button button-primary" disabled={busy}>
          {busy ? 'Saving…' : 'Save billing details'}
        </button>
      </div>
      {result !== undefined && <Notice kind={result.kind}>{result.text}</Notice>}
    </form>
  );
}
