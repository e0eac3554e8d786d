import { useId, useState, type FormEvent } from 'react';
import { organisations as organisationsApi } from '../api/organisations';
import { useOrganisation } from '../lib/organisation';
import { Dialog } from './Dialog';
import { Field } from './Field';
import { Notice } from './Notice';

/** The organisation the session works in: pick another, or create one (the person owns what they create). */
export function OrganisationSwitcher() {
  const { current, organisations, switchTo, reload } = useOrganisation();
  const id = useId();
  const [creating, setCreating] = useState(false);
  const [name, setName] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();

  async function choose(organisationId: string) {
    setError(undefined);
    try {
      await switchTo(organisationId);
    } catch (reason) {
      setError((reason as Error).message);
    }
  }

  async function create(event: FormEvent) {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const created = await organisationsApi.create(name);
      await reload();
      await switchTo(created.organisation.id);
      setCreating(false);
      setName('');
    } catch (reason) {
      setError((reason as Error).message);
    } finally {
      setBusy(false);
    }
  }

  return (
    <div className="org-switcher">
      <label htmlFor={`${id}-org`} className="small muted">
        Organisation
      </label>
      <select
        id={`${id}-org`}
        className="input input-small"
        value={current?.id ?? ''}
        onChange={(event) => void choose(event.target.value)}
      >
        {current === null && <option value="">None</option>}
        {organisations.map((organisation) => (
          <option key={organisation.id} value={organisation.id}>
            {organisation.name} ({organisation.role})
          </option>
        ))}
      </select>
      <button type="button" className="button button-secondary button-small" onClick={() => setCreating(true)}>
        New organisation
      </button>
      {error !== undefined && !creating && <Notice kind="error">{error}</Notice>}
      {/* Mounted only while open: its form's "Name" field must not shadow a page's own. */}
      {creating && (
        <Dialog title="New organisation" open onClose={() => setCreating(false)}>
          <form onSubmit={create} className="stack">
            <Field
              label="Name"
              hint="1 to 100 characters. You will be its owner."
              required
              maxLength={100}
              value={name}
              onChange={(event) => setName(event.target.value)}
              error={error}
            />
            <div className="dialog-actions">
              <button type="button" className="button button-secondary" onClick={() => setCreating(false)}>
                Cancel
              </button>
              <button type="submit" className="button button-primary" disabled={busy || name.trim() === ''}>
                {busy ? 'Creating…' : 'Create'}
              </button>
            </div>
          </form>
        </Dialog>
      )}
    </div>
  );
}
