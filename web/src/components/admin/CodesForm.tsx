import { useState, type FormEvent } from 'react';
import { admin } from '../../api/endpoints';
import { formatUsd, isCentsAmount } from '../../lib/money';
import { CopyButton } from '../CopyButton';
import { Notice } from '../Notice';

/** Mints prepaid codes; they are shown here once (only their hashes are stored). */
export function CodesForm() {
  const [amount, setAmount] = useState('10');
  const [count, setCount] = useState('1');
  const [expiry, setExpiry] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const [codes, setCodes] = useState<{ amount: string; list: string[] } | null>(null);
  async function submit(event: FormEvent) {
    event.preventDefault();
    setError(undefined);
    if (!isCentsAmount(amount)) return setError('Enter a positive amount in dollars, with at most two decimals.');
    const howMany = Number(count);
    if (!Number.isInteger(howMany) || howMany < 1 || howMany > 1000)
      return setError('Count is a whole number from 1 to 1000.');
    const days = expiry.trim() === '' ? undefined : Number(expiry);
    if (days !== undefined && (!Number.isInteger(days) || days < 1))
      return setError('Expiry is a whole number of days, or empty for none.');
    setBusy(true);
    try {
      const reply = await admin.createCodes(amount.trim(), howMany, days);
      setCodes({ amount: amount.trim(), list: reply.codes });
    } catch (reason) {
      setError((reason as Error).message);
    } finally {
      setBusy(false);
    }
  }
  return (
    <>
      <form onSubmit={submit} className="form-row">
        <div className="field">
          <label htmlFor="code-amount">Value (USD)</label>
          <input
            id="code-amount"
            className="input"
            inputMode="decimal"
            required
            value={amount}
            onChange={(event) => setAmount(event.target.value)}
          />
        </div>
        <div className="field">
          <label htmlFor="code-count">How many</label>
          <input
            id="code-count"
            className="input"
            type="number"
            min={1}
            max={1000}
            required
            value={count}
            onChange={(event) => setCount(event.target.value)}
          />
        </div>
        <div className="field">
          <label htmlFor="code-expiry">Expires after (days, optional)</label>
          <input
            id="code-expiry"
            className="input"
            type="number"
            min={1}
            value={expiry}
            onChange={(event) => setExpiry(event.target.value)}
          />
        </div>
        <button type="submit" className="button button-primary" disabled={busy}>
          {busy ? 'Creating…' : 'Create codes'}
        </button>
      </form>
      {error !== undefined && <Notice kind="error">{error}</Notice>}
      {codes !== null && (
        <div className="codes">
          <Notice kind="warning">
            {codes.list.length} code{codes.list.length === 1 ? '' : 's'} worth {formatUsd(codes.amount)} each. They will
            not be shown again: copy them now.
          </Notice>
          <textarea
            className="input mono codes-list"
            aria-label="New redemption codes"
            readOnly
            rows={Math.min(codes.list.length, 8)}
            value={codes.list.join('\n')}
          />
          <CopyButton text={codes.list.join('\n')} label="Copy codes" />
        </div>
      )}
    </>
  );
}
