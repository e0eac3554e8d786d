import { useState, type FormEvent } from 'react';
import { billing } from '../api/endpoints';
import type { Billing } from '../api/types';
import { formatUsd, isCentsAmount, toNano } from '../lib/money';
import { Notice } from './Notice';

const PRESETS = ['10', '25', '50', '100'];

/** Card top-up through Stripe Checkout: the server creates the session, the browser goes to Stripe's page. */
export function TopUpForm({ stripe }: { stripe: Billing['stripe'] }) {
  const [amount, setAmount] = useState('25');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const min = toNano(stripe.minimumUsd);
  const max = toNano(stripe.maximumUsd);
  async function submit(event: FormEvent) {
    event.preventDefault();
    setError(undefined);
    if (!isCentsAmount(amount)) return setError('Enter an amount in dollars, with at most two decimals.');
    const nano = toNano(amount);
    if (nano < min || nano > max)
      return setError(`Top-ups are between ${formatUsd(stripe.minimumUsd)} and ${formatUsd(stripe.maximumUsd)}.`);
    setBusy(true);
    try {
      const { url } = await billing.checkout(amount.trim());
      window.location.assign(url);
    } catch (reason) {
      setError((reason as Error).message);
      setBusy(false);
    }
  }
  return (
    <form onSubmit={submit} className="stack">
      <div className="presets" role="group" aria-label="Preset amounts">
        {PRESETS.map((preset) => (
          <button
            key={preset}
            type="button"
            className="button button-secondary button-small"
            aria-pressed={amount === preset}
            onClick={() => {
              setAmount(preset);
              setError(undefined);
            }}
          >
            ${preset}
          </button>
        ))}
      </div>
      <div className="form-row">
        <div className="field grow">
          <label htmlFor="topup-amount">Amount (USD)</label>
          <input
            id="topup-amount"
            className="input"
            inputMode="decimal"
            required
            aria-describedby="topup-hint"
            value={amount}
            onChange={(event) => {
              setAmount(event.target.value);
              setError(undefined);
            }}
          />
        </div>
        <button type="submit" className="button button-primary" disabled={busy}>
          {busy ? 'Opening checkout…' : 'Add credit'}
        </button>
      </div>
      <p id="topup-hint" className="field-hint">
        {formatUsd(stripe.minimumUsd)} to {formatUsd(stripe.maximumUsd)}. You pay on Stripe's secure checkout page; the
        credit appears once Stripe confirms the payment.
      </p>
      {error !== undefined && <Notice kind="error">{error}</Notice>}
    </form>
  );
}
