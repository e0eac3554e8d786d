import { useState } from 'react';

/** Copies `text`; falls back to a hidden textarea where the Clipboard API is unavailable (plain HTTP). */
async function copyText(text: string): Promise<void> {
  if (navigator.clipboard !== undefined && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.style.position = 'fixed';
  area.style.opacity = '0';
  document.body.append(area);
  area.select();
  document.execCommand('copy');
  area.remove();
}

export function CopyButton({
  text,
  label = 'Copy',
  onCopied,
}: {
  text: string;
  label?: string;
  /** Called once the text is on the clipboard. */
  onCopied?: () => void;
}) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  async function copy() {
    try {
      await copyText(text);
      setState('copied');
      onCopied?.();
    } catch {
      setState('failed');
    }
    window.setTimeout(() => setState('idle'), 2000);
  }
  return (
    <button type="button" className="button button-secondary button-small" onClick={copy} aria-live="polite">
      {state === 'copied' ? 'Copied' : state === 'failed' ? 'Copy failed' : label}
    </button>
  );
}
