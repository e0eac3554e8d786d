import { useId, useState } from 'react';
import { CopyButton } from './CopyButton';

export interface CodeSample {
  label: string;
  code: string;
}

/** Tabbed code samples (WAI-ARIA tabs pattern) with a copy button for the visible one. */
export function CodeTabs({
  samples,
  label,
  onCopied,
}: {
  samples: CodeSample[];
  label: string;
  /** Called when a sample is copied. */
  onCopied?: () => void;
}) {
  const [selected, setSelected] = useState(0);
  const baseId = useId();
  const sample = samples[selected]!;
  return (
    <div className="code-tabs">
      <div className="code-tabs-bar">
        <div role="tablist" aria-label={label}>
          {samples.map((item, index) => (
            <button
              key={item.label}
              type="button"
              role="tab"
              id={`${baseId}-tab-${index}`}
              aria-selected={index === selected}
              aria-controls={`${baseId}-panel`}
              className="tab"
              onClick={() => setSelected(index)}
            >
              {item.label}
            </button>
          ))}
        </div>
        <CopyButton text={sample.code} {...(onCopied === undefined ? {} : { onCopied })} />
      </div>
      <pre
        role="tabpanel"
        id={`${baseId}-panel`}
        aria-labelledby={`${baseId}-tab-${selected}`}
        className="code"
        tabIndex={0}
      >
        <code>{sample.code}</code>
      </pre>
    </div>
  );
}
