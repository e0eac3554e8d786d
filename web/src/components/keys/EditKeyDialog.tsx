import { useEffect, useState } from 'react';
import { keys as keysApi } from '../../api/endpoints';
import type { ApiKey } from '../../api/types';
import { Dialog } from '../Dialog';
import { ErrorNotice } from '../Notice';
import { draftOf, KeyLimitsFields, toLimitsInput, type KeyLimitsDraft } from './KeyLimitsFields';

/** Changes a key's name, permissions and limits; they apply from its next request. */
export function EditKeyDialog({
  apiKey,
  onClose,
  onSaved,
}: {
  apiKey: ApiKey | null;
  onClose: () => void;
  onSaved: (key: ApiKey) => void;
}) {
  const [name, setName] = useState('');
  const [draft, setDraft] = useState<KeyLimitsDraft | null>(null);
  const [error, setError] = useState<Error>();
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    setName(apiKey?.name ?? '');
    setDraft(apiKey === null ? null : draftOf(apiKey));
    setError(undefined);
  }, [apiKey]);
  async function save() {
    if (apiKey === null || draft === null) return;
    setBusy(true);
    setError(undefined);
    try {
      const { key } = await keysApi.update(apiKey.id, { name: name.trim(), ...toLimitsInput(draft, draftOf(apiKey)) });
      onSaved(key);
    } catch (reason) {
      setError(reason as Error);
    } finally {
      setBusy(false);
    }
  }
  return (
    <Dialog
      title={`Edit “${apiKey?.name ?? ''}”`}
      open={apiKey !== null}
      onClose={onClose}
      actions={
        <>
          <button type="button" className="button button-secondary" onClick={onClose}>
            Cancel
          </button>
          <button type="button" className="button button-primary" disabled={busy || name.trim() === ''} onClick={save}>
            {busy ? 'Saving…' : 'Save changes'}
          </button>
        </>
      }
    >
      <div className="field">
        <label htmlFor="edit-key-name">Name</label>
        <input
          id="edit-key-name"
          className="input"
          required
          maxLength={100}
          value={name}
          onChange={(event) => setName(event.target.value)}
        />
      </div>
      {draft !== null && <KeyLimitsFields draft={draft} onChange={setDraft} />}
      <ErrorNotice error={error} />
    </Dialog>
  );
}
