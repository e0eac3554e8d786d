import { useState, type FormEvent } from 'react';
import { admin } from '../../api/endpoints';
import type { AdminAccount } from '../../api/types';
import { formatUsd, isCentsAmount } from '../../lib/money';
import { Dialog } from '../Dialog';
import { Notice } from '../Notice';

/** Credits (adds to) an account's balance; the note lands in the account's ledger. */
export function CreditDialog({
  account,
  onClose,
  onDone,
}: {
  account: AdminAccount | null;
  onClose: () => void;
  onDone: (message: string) => void;
}) {
  const [amount, setAmount] = useState('');
  const [note, setNote] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  function close() {
    setAmount('');
    setNote('');
    setError(undefined);
    onClose();
  }
  async function submit(event: FormEvent) {
    event.preventDefault();
    if (account === null) return;
    if (!isCentsAmount(amount)) return setError('Enter a positive amount in dollars, with at most two decimals.');
    setBusy(true);
    setError(undefined);
    try {
      const { balanceUsd } = await admin.credit(account.id, amount.trim(), note.trim());
      onDone(`Credited ${formatUsd(amount)} to ${account.email}; balance now ${formatUsd(balanceUsd)}.`);
      close();
    } catch (reason) {
      setError((reason as Error).message);
    } finally {
      setBusy(false);
    }
  }
  return (
    <Dialog title={`Credit ${account?.email ?? ''}`} open={account !== null} onClose={close}>
      <form onSubmit={submit} className="stack">
        <div className="field">
          <label htmlFor="credit-amount">Amount (USD)</label>
          <input
            id="credit-amount"
            className="input"
            inputMode="decimal"
            required
            value={amount}
            onChange={(event) => setAmount(event.target.value)}
          />
        </div>
        <div className="field">
          <label htmlFor="credit-note">Note (shown in the account's ledger)</label>
          <input
            id="credit-note"
            className="input"
            value={note}
            onChange={(event) => setNote(event.target.value)}
            placeholder="e.g. invoice 2026-114"
          />
        </div>
        {error !== undefined && <Notice kind="error">{error}</Notice>}
        <div className="dialog-actions">
          <button type="button" className="button button-secondary" onClick={close}>
            Cancel
          </button>
          <button type="submit" className="button button-primary" disabled={busy}>
            {busy ? 'Crediting…' : 'Credit account'}
          </button>
        </div>
      </form>
    </Dialog>
  );
}
