import { useId, useState, type FormEvent } from 'react';
import { customRangeProblem, dayText, type UsagePreset, type UsageSpan } from '../lib/usage-query';
import { SegmentedControl } from './SegmentedControl';

const PRESETS: { value: UsagePreset | 'custom'; label: string }[] = [
  { value: 7, label: '7 days' },
  { value: 30, label: '30 days' },
  { value: 90, label: '90 days' },
  { value: 'custom', label: 'Dates' },
];

/**
 * The presets, or dates of one's own: "Dates" opens a from/to pair (UTC days) applied with a button, checked here
 * with the server's rules so a bad pair says why instead of asking.
 */
export function UsageRangePicker({ span, onChange }: { span: UsageSpan; onChange: (span: UsageSpan) => void }) {
  const ids = useId();
  const today = dayText(Math.floor(Date.now() / 86_400_000));
  const [custom, setCustom] = useState('from' in span);
  const [from, setFrom] = useState('from' in span ? span.from : dayText(Math.floor(Date.now() / 86_400_000) - 29));
  const [to, setTo] = useState('to' in span ? span.to : today);
  const [problem, setProblem] = useState<string>();
  const selected = custom ? 'custom' : 'days' in span ? span.days : 'custom';

  function apply(event: FormEvent) {
    event.preventDefault();
    const found = customRangeProblem(from, to);
    setProblem(found);
    if (found === undefined) onChange({ from, to });
  }

  return (
    <div className="range-picker">
      <SegmentedControl
        label="Range"
        options={PRESETS}
        value={selected}
        onChange={(value) => {
          if (value === 'custom') {
            setCustom(true);
            return;
          }
          setCustom(false);
          setProblem(undefined);
          onChange({ days: value });
        }}
      />
      {custom && (
        <form className="range-dates" onSubmit={apply} aria-label="Dates">
          <div className="field">
            <label htmlFor={`${ids}-from`}>From</label>
            <input
              id={`${ids}-from`}
              className="input"
              type="date"
              max={today}
              value={from}
              aria-invalid={problem !== undefined}
              aria-describedby={problem === undefined ? undefined : `${ids}-problem`}
              onChange={(event) => setFrom(event.target.value)}
            />
          </div>
          <div className="field">
            <label htmlFor={`${ids}-to`}>To</label>
            <input
              id={`${ids}-to`}
              className="input"
              type="date"
              max={today}
              value={to}
              aria-invalid={problem !== undefined}
              onChange={(event) => setTo(event.target.value)}
            />
          </div>
          <button type="submit" className="button button-secondary">
            Show
          </button>
          {problem !== undefined && (
            <p id={`${ids}-problem`} className="field-error" role="alert">
              {problem}
            </p>
          )}
        </form>
      )}
    </div>
  );
}
