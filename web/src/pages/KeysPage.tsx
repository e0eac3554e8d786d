import { useState, type FormEvent } from 'react';
import { keys as keysApi, projects as projectsApi } from '../api/endpoints';
import type { ApiKey, Project } from '../api/types';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { EditKeyDialog } from '../components/keys/EditKeyDialog';
import { EMPTY_LIMITS, KeyLimitsFields, toLimitsInput } from '../components/keys/KeyLimitsFields';
import { describeKeyAccess, KeySpendBar } from '../components/keys/KeySpendBar';
import { ErrorNotice, Loading, Notice } from '../components/Notice';
import { PageHeader } from '../components/PageHeader';
import { roleReason, useCan, useOrganisation } from '../lib/organisation';
import { SecretDialog } from '../components/SecretDialog';
import { KeyStatusBadge } from '../components/keys/KeyStatusBadge';
import { formatDate, formatDateTime, formatRelative } from '../lib/format';
import { useAsync } from '../lib/use-async';

const EXPIRY_OPTIONS = [
  { label: 'Never', days: undefined },
  { label: '7 days', days: 7 },
  { label: '30 days', days: 30 },
  { label: '90 days', days: 90 },
  { label: '1 year', days: 365 },
] as const;

type Pending = { action: 'revoke' | 'rotate'; key: ApiKey } | null;

function CreateKeyForm({
  projects,
  onCreated,
}: {
  /** The live projects to choose from, the default first. */
  projects: Project[];
  onCreated: (secret: string, key: ApiKey) => void;
}) {
  const [name, setName] = useState('');
  const [expiry, setExpiry] = useState('0');
  // Empty: the default project (the server's choice when none is sent).
  const [projectId, setProjectId] = useState('');
  const [limits, setLimits] = useState(EMPTY_LIMITS);
  const [error, setError] = useState<Error>();
  const [busy, setBusy] = useState(false);
  async function submit(event: FormEvent) {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const { key, secret } = await keysApi.create(
        name.trim(),
        EXPIRY_OPTIONS[Number(expiry)]!.days,
        toLimitsInput(limits),
        projectId === '' ? undefined : projectId,
      );
      setName('');
      setExpiry('0');
      setLimits(EMPTY_LIMITS);
      onCreated(secret, key);
    } catch (reason) {
      setError(reason as Error);
    } finally {
      setBusy(false);
    }
  }
  return (
    <form className="card section create-key" onSubmit={submit} aria-labelledby="create-key-heading">
      <h2 id="create-key-heading">Create a new key</h2>
      <div className="form-row">
        <div className="field grow">
          <label htmlFor="key-name">Name</label>
          <input
            id="key-name"
            className="input"
            required
            placeholder="e.g. production backend"
            value={name}
            onChange={(event) => setName(event.target.value)}
          />
        </div>
        <div className="field">
          <label htmlFor="key-expiry">Expires</label>
          <select id="key-expiry" className="input" value={expiry} onChange={(event) => setExpiry(event.target.value)}>
            {EXPIRY_OPTIONS.map((option, index) => (
              <option key={option.label} value={index}>
                {option.label}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor="key-project">Project</label>
          <select
            id="key-project"
            className="input"
            value={projectId}
            onChange={(event) => setProjectId(event.target.value)}
          >
            {projects.map((project) => (
              <option key={project.id} value={project.isDefault ? '' : project.id}>
                {project.name}
              </option>
            ))}
            {projects.length === 0 && <option value="">Default</option>}
          </select>
        </div>
        <button type="submit" className="button button-primary" disabled={busy || name.trim() === ''}>
          {busy ? 'Creating…' : 'Create key'}
        </button>
      </div>
      <details className="key-options">
        <summary>Permissions and limits</summary>
        <KeyLimitsFields draft={limits} onChange={setLimits} />
      </details>
      <ErrorNotice error={error} />
    </form>
  );
}

function KeyRow({
  apiKey,
  projectName,
  onAction,
  onEdit,
}: {
  apiKey: ApiKey;
  projectName: string;
  onAction: (pending: Pending) => void;
  onEdit: (key: ApiKey) => void;
}) {
  // Billing and viewer roles see the keys and change none; the server refuses them anyway.
  const mayChange = useCan('keys:own');
  const active = apiKey.status === 'active';
  return (
    <tr>
      <th scope="row" className="key-name">
        {apiKey.name}
      </th>
      <td>
        {apiKey.kind === 'playground' ? (
          <span className="small muted">No secret: used by the Playground only</span>
        ) : (
          <code className="hint">{apiKey.hint}</code>
        )}
      </td>
      <td data-label="Project">{projectName}</td>
      <td data-label="Access and limits" className="key-access">
        <span className="small">{describeKeyAccess(apiKey)}</span>
        {apiKey.spendLimit === null ? (
          <span className="small muted"> · no spend limit</span>
        ) : (
          <KeySpendBar limit={apiKey.spendLimit} />
        )}
      </td>
      <td data-label="Created" title={formatDateTime(apiKey.createdAt)}>
        {formatDate(apiKey.createdAt)}
      </td>
      <td data-label="Last used" title={apiKey.lastUsedAt === null ? undefined : formatDateTime(apiKey.lastUsedAt)}>
        {apiKey.lastUsedAt === null ? 'Never' : formatRelative(apiKey.lastUsedAt)}
      </td>
      <td data-label="Expires">{apiKey.expiresAt === null ? 'Never' : formatDate(apiKey.expiresAt)}</td>
      <td data-label="Status">
        <KeyStatusBadge apiKey={apiKey} />
      </td>
      <td className="actions">
        {active && mayChange && (
          <>
            <button
              type="button"
              className="button button-secondary button-small"
              aria-label={`Edit ${apiKey.name}`}
              onClick={() => onEdit(apiKey)}
            >
              Edit
            </button>
            {apiKey.kind === 'standard' && (
              <>
                <button
                  type="button"
                  className="button button-secondary button-small"
                  aria-label={`Rotate ${apiKey.name}`}
                  onClick={() => onAction({ action: 'rotate', key: apiKey })}
                >
                  Rotate
                </button>
                <button
                  type="button"
                  className="button button-danger-outline button-small"
                  aria-label={`Revoke ${apiKey.name}`}
                  onClick={() => onAction({ action: 'revoke', key: apiKey })}
                >
                  Revoke
                </button>
              </>
            )}
          </>
        )}
      </td>
    </tr>
  );
}

function KeysTable({
  caption,
  keys,
  projectNames,
  onAction,
  onEdit,
}: {
  caption: string;
  keys: ApiKey[];
  projectNames: ReadonlyMap<string, string>;
  onAction: (pending: Pending) => void;
  onEdit: (key: ApiKey) => void;
}) {
  return (
    <div className="table-wrap" tabIndex={0} role="region" aria-label={`${caption}, scrollable`}>
      <table className="table table-stack">
        <caption className="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Key</th>
            <th scope="col">Project</th>
            <th scope="col">Access and limits</th>
            <th scope="col">Created</th>
            <th scope="col">Last used</th>
            <th scope="col">Expires</th>
            <th scope="col">Status</th>
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {keys.map((key) => (
            <KeyRow
              key={key.id}
              apiKey={key}
              projectName={projectNames.get(key.projectId) ?? key.projectId}
              onAction={onAction}
              onEdit={onEdit}
            />
          ))}
        </tbody>
      </table>
    </div>
  );
}

function KeyGuidance() {
  return (
    <aside className="card section guidance" aria-labelledby="guidance-heading">
      <h2 id="guidance-heading">Keeping keys safe</h2>
      <ul>
        <li>Keep keys out of version control; never paste them into client-side code.</li>
        <li>Load keys from environment variables or a secret manager, not hard-coded strings.</li>
        <li>Use one key per environment or project, so one can be revoked without touching the others.</li>
        <li>Rotate regularly: rotating creates a new key and revokes the old one at once.</li>
        <li>Watch the Usage page for unusual activity, and revoke a key you suspect has leaked.</li>
      </ul>
    </aside>
  );
}

export function KeysPage() {
  const { current } = useOrganisation();
  const canCreate = useCan('keys:own');
  const list = useAsync(keysApi.list, []);
  const projectList = useAsync(() => projectsApi.list(true), []);
  const allProjects = projectList.data?.projects ?? [];
  // A key of an archived project stays listed, but no longer works: its project says so.
  const projectNames = new Map(
    allProjects.map((project) => [
      project.id,
      project.archivedAt === null ? project.name : `${project.name} (archived)`,
    ]),
  );
  const [secret, setSecret] = useState<{ value: string; name: string; rotated: boolean } | null>(null);
  const [pending, setPending] = useState<Pending>(null);
  const [busy, setBusy] = useState(false);
  const [actionError, setActionError] = useState<Error>();
  const [message, setMessage] = useState<string>();
  const [editing, setEditing] = useState<ApiKey | null>(null);

  async function confirm() {
    if (pending === null) return;
    setBusy(true);
    setActionError(undefined);
    try {
      if (pending.action === 'revoke') {
        await keysApi.revoke(pending.key.id);
        setMessage(`Key “${pending.key.name}” was revoked; requests with it now get 401.`);
      } else {
        const rotated = await keysApi.rotate(pending.key.id);
        setSecret({ value: rotated.secret, name: rotated.key.name, rotated: true });
        setMessage(undefined);
      }
      setPending(null);
      list.reload();
    } catch (reason) {
      setActionError(reason as Error);
    } finally {
      setBusy(false);
    }
  }

  const keys = list.data?.keys ?? [];
  const activeKeys = keys.filter((key) => key.status === 'active');
  const inactiveKeys = keys.filter((key) => key.status !== 'active');
  return (
    <>
      <PageHeader
        title="API keys"
        description="Keys authenticate your requests to the API. Each key can be rotated or revoked without affecting the others."
      />
      {canCreate ? (
        <CreateKeyForm
          projects={allProjects.filter((project) => project.archivedAt === null)}
          onCreated={(value, key) => {
            setSecret({ value, name: key.name, rotated: false });
            setMessage(undefined);
            list.reload();
          }}
        />
      ) : (
        <Notice kind="info">{roleReason(current?.role, 'creating or changing API keys')}</Notice>
      )}
      {current?.role === 'developer' && <p className="muted">You see the keys you created in this organisation.</p>}
      {message !== undefined && <Notice kind="success">{message}</Notice>}
      <section className="card section" aria-labelledby="keys-heading">
        <h2 id="keys-heading">Your keys</h2>
        <ErrorNotice error={list.error} />
        {list.loading && list.data === undefined && <Loading />}
        {list.data !== undefined && keys.length === 0 && (
          <p className="muted">No keys yet. Create one above to start calling the API.</p>
        )}
        {activeKeys.length > 0 && (
          <KeysTable
            caption="API keys"
            keys={activeKeys}
            projectNames={projectNames}
            onAction={setPending}
            onEdit={setEditing}
          />
        )}
        {list.data !== undefined && keys.length > 0 && activeKeys.length === 0 && (
          <p className="muted">No active keys. Create one above to call the API.</p>
        )}
        {/* Revoked and expired keys apart, folded: after a rotation the old key does not sit beside the new one of the same name. */}
        {inactiveKeys.length > 0 && (
          <details className="inactive-keys">
            <summary>Revoked and expired keys ({inactiveKeys.length})</summary>
            <KeysTable
              caption="Revoked and expired keys"
              keys={inactiveKeys}
              projectNames={projectNames}
              onAction={setPending}
              onEdit={setEditing}
            />
          </details>
        )}
      </section>
      <KeyGuidance />
      <EditKeyDialog
        apiKey={editing}
        onClose={() => setEditing(null)}
        onSaved={(key) => {
          setEditing(null);
          setMessage(`Key “${key.name}” was updated; the change applies from its next request.`);
          list.reload();
        }}
      />
      <SecretDialog
        secret={secret?.value ?? null}
        keyName={secret?.name ?? ''}
        rotated={secret?.rotated ?? false}
        onClose={() => setSecret(null)}
      />
      <ConfirmDialog
        title={pending?.action === 'rotate' ? 'Rotate this key?' : 'Revoke this key?'}
        open={pending !== null}
        confirmLabel={pending?.action === 'rotate' ? 'Rotate key' : 'Revoke key'}
        danger={pending?.action === 'revoke'}
        busy={busy}
        onConfirm={confirm}
        onCancel={() => {
          setPending(null);
          setActionError(undefined);
        }}
      >
        {pending?.action === 'rotate' ? (
          <p>
            A new key named <strong>{pending.key.name}</strong> is created and <code>{pending.key.hint}</code> stops
            working immediately. Update your applications with the new key.
          </p>
        ) : (
          <p>
            <strong>{pending?.key.name}</strong> (<code>{pending?.key.hint}</code>) stops working immediately. Any
            application using it will get 401 errors. This cannot be undone.
          </p>
        )}
        <ErrorNotice error={actionError} />
      </ConfirmDialog>
    </>
  );
}
