import { useState, type FormEvent } from 'react';
import { billing } from '../api/endpoints';
import { formatUsd } from '../lib/money';
import { Notice } from './Notice';

export function RedeemForm({ onRedeemed }: { onRedeemed: () => void }) {
  const [code, setCode] = useState('');
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ kind: 'success' | 'error'; text: string }>();
  async function submit(event: FormEvent) {
    event.preventDefault();
    setBusy(true);
    setResult(undefined);
    try {
      const reply = await billing.redeem(code.trim());
      setResult({
        kind: 'success',
        text: `${formatUsd(reply.creditedUsd)} added. Your balance is now ${formatUsd(reply.balanceUsd)}.`,
      });
      setCode('');
      onRedeemed();
    } catch (reason) {
      setResult({ kind: 'error', text: (reason as Error).message });
    } finally {
      setBusy(false);
    }
  }
  return (
    <form onSubmit={submit} className="stack">
      <div className="form-row">
        <div className="field grow">
          <label htmlFor="redeem-code">Redemption code</label>
          <input
            id="redeem-code"
            className="input mono"
            placeholder="TG-XXXX-XXXX-XXXX-XXXX"
            autoComplete="off"
            spellCheck={false}
            required
            value={code}
            onChange={(event) => setCode(event.target.value)}
          />
        </div>
        <button type="submit" className="button button-primary" disabled={busy || code.trim() === ''}>
          {busy ? 'Redeeming…' : 'Redeem'}
        </button>
      </div>
      {result !== undefined && <Notice kind={result.kind}>{result.text}</Notice>}
    </form>
  );
}
