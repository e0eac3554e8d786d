import { useId } from 'react';
import { keys as keysApi } from '../../api/endpoints';
import { useAsync } from '../../lib/use-async';

/** "All keys" or one of the account's keys (revoked ones too: their past usage stays). */
export function KeyFilter({ value, onChange }: { value: string | null; onChange: (keyId: string | null) => void }) {
  const id = useId();
  const list = useAsync(keysApi.list, []);
  return (
    <div className="key-filter">
      <label htmlFor={id} className="visually-hidden">
        Key
      </label>
      <select id={id} className="input" value={value ?? ''} onChange={(event) => onChange(event.target.value === '' ? null : event.target.value)}>
        <option value="">All keys</option>
        {(list.data?.keys ?? []).map((key) => (
          <option key={key.id} value={key.id}>
            {key.name} ({key.hint})
          </option>
        ))}
      </select>
    </div>
  );
}
