import { useEffect, useId, useState, type FormEvent } from 'react';
import { ApiError } from '../../api/client';
import { admin } from '../../api/endpoints';
import type { CatalogSection, CatalogView } from '../../api/types';
import { Notice } from '../Notice';

/** What the form starts from: an entry to edit, or a blank one of a section. */
export interface CatalogDraft {
  section: CatalogSection;
  id: string;
  entry: Record<string, unknown>;
}

const TEMPLATES: Record<CatalogSection, Record<string, unknown>> = {
  models: {
    family: 'alpha',
    upstreamModel: 'claude-model-id',
    contextWindow: 200000,
    maxOutputTokens: 32000,
    prices: { input: '3.00', output: '15.00' },
  },
  aliases: { model: 'alpha-sonnet-5' },
  deployments: { family: 'alpha', baseUrl: 'https://api.anthropic.com', apiKeyEnv: 'ANTHROPIC_EU_KEY', weight: 1 },
};

export function blankDraft(section: CatalogSection): CatalogDraft {
  return { section, id: '', entry: TEMPLATES[section] };
}

/**
 * Adds or replaces one stored entry, written as JSON in tollgate.yaml's shape. The gateway checks it against the
 * whole catalog before storing it; a refusal names the entry and field, and nothing changes.
 */
export function CatalogEntryForm({ draft, onSaved }: { draft: CatalogDraft; onSaved: (view: CatalogView) => void }) {
  const ids = useId();
  const [section, setSection] = useState<CatalogSection>(draft.section);
  const [id, setId] = useState(draft.id);
  const [text, setText] = useState(JSON.stringify(draft.entry, null, 2));
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<{ message: string; field?: string | undefined }>();
  const [saved, setSaved] = useState<string>();
  useEffect(() => {
    setSection(draft.section);
    setId(draft.id);
    setText(JSON.stringify(draft.entry, null, 2));
    setError(undefined);
    setSaved(undefined);
  }, [draft]);

  async function submit(event: FormEvent) {
    event.preventDefault();
    setError(undefined);
    setSaved(undefined);
    let entry: unknown;
    try {
      entry = JSON.parse(text);
    } catch {
      return setError({ message: 'The entry is not valid JSON.', field: 'entry' });
    }
    if (id.trim() === '') return setError({ message: 'Give the entry a name.', field: 'id' });
    setBusy(true);
    try {
      const view = await admin.putCatalogEntry(section, id.trim(), entry);
      setSaved(`Saved ${section}.${id.trim()} as revision ${view.revision}; every instance applies it.`);
      onSaved(view);
    } catch (reason) {
      const field = reason instanceof ApiError ? reason.field : undefined;
      setError({ message: (reason as Error).message, field });
    } finally {
      setBusy(false);
    }
  }

  const entryError = error !== undefined && error.field !== 'id' ? error.message : undefined;
  return (
    <form onSubmit={submit} aria-labelledby={`${ids}-title`}>
      <h3 id={`${ids}-title`}>Add or replace an entry</h3>
      <div className="form-row">
        <div className="field">
          <label htmlFor={`${ids}-section`}>Kind</label>
          <select
            id={`${ids}-section`}
            className="input"
            value={section}
            onChange={(event) => setSection(event.target.value as CatalogSection)}
          >
            <option value="models">Model</option>
            <option value="aliases">Alias</option>
            <option value="deployments">Deployment</option>
          </select>
        </div>
        <div className="field grow">
          <label htmlFor={`${ids}-id`}>Name</label>
          <input
            id={`${ids}-id`}
            className="input mono"
            value={id}
            aria-invalid={error?.field === 'id'}
            aria-describedby={error?.field === 'id' ? `${ids}-id-error` : undefined}
            onChange={(event) => setId(event.target.value)}
          />
          {error?.field === 'id' && (
            <p id={`${ids}-id-error`} className="field-error">
              {error.message}
            </p>
          )}
        </div>
      </div>
      <div className="field">
        <label htmlFor={`${ids}-entry`}>Entry (JSON, as tollgate.yaml holds it)</label>
        <textarea
          id={`${ids}-entry`}
          className="input mono catalog-entry"
          rows={10}
          spellCheck={false}
          value={text}
          aria-invalid={entryError !== undefined}
          aria-describedby={`${ids}-hint${entryError === undefined ? '' : ` ${ids}-entry-error`}`}
          onChange={(event) => setText(event.target.value)}
        />
        <p id={`${ids}-hint`} className="field-hint">
          A stored entry replaces tollgate.yaml's of the same name whole. Deployments name the environment variable that
          holds their key (<code>apiKeyEnv</code>); keys are never stored.
        </p>
        {entryError !== undefined && (
          <p id={`${ids}-entry-error`} className="field-error" role="alert">
            {entryError}
          </p>
        )}
      </div>
      <button type="submit" className="button button-primary" disabled={busy}>
        {busy ? 'Checking…' : 'Check and save'}
      </button>
      {saved !== undefined && <Notice kind="success">{saved}</Notice>}
    </form>
  );
}
