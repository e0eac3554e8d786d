import { useEffect, useState, type FormEvent } from 'react';
import { keys as keysApi, projects as projectsApi } from '../api/endpoints';
import type { Project } from '../api/types';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { Dialog } from '../components/Dialog';
import { ErrorNotice, Loading, Notice } from '../components/Notice';
import { PageHeader } from '../components/PageHeader';
import { StatusBadge } from '../components/StatusBadge';
import { formatDate, formatDateTime } from '../lib/format';
import { modelList } from '../lib/model-list';
import { roleReason, useCan, useOrganisation } from '../lib/organisation';
import { useAsync } from '../lib/use-async';

function describeModels(models: string[] | null): string {
  return models === null ? 'Every model' : models.join(', ');
}

function CreateProjectForm({ onCreated }: { onCreated: (project: Project) => void }) {
  const [name, setName] = useState('');
  const [models, setModels] = useState('');
  const [error, setError] = useState<Error>();
  const [busy, setBusy] = useState(false);
  async function submit(event: FormEvent) {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const { project } = await projectsApi.create(name.trim(), modelList(models));
      setName('');
      setModels('');
      onCreated(project);
    } catch (reason) {
      setError(reason as Error);
    } finally {
      setBusy(false);
    }
  }
  return (
    <form className="card section" onSubmit={submit} aria-labelledby="create-project-heading">
      <h2 id="create-project-heading">Create a project</h2>
      <div className="form-row">
        <div className="field grow">
          <label htmlFor="project-name">Name</label>
          <input
            id="project-name"
            className="input"
            required
            maxLength={100}
            placeholder="e.g. mobile app"
            value={name}
            onChange={(event) => setName(event.target.value)}
          />
        </div>
        <div className="field grow">
          <label htmlFor="project-models">Models allowed</label>
          <input
            id="project-models"
            className="input"
            placeholder="Every model"
            aria-describedby="project-models-help"
            value={models}
            onChange={(event) => setModels(event.target.value)}
          />
        </div>
        <button type="submit" className="button button-primary" disabled={busy || name.trim() === ''}>
          {busy ? 'Creating…' : 'Create project'}
        </button>
      </div>
      <p id="project-models-help" className="small muted">
        Model ids or families, separated by commas (such as “gamma, beta-5.4”). A key in the project may use only models
        both its own list and the project's allow.
      </p>
      <ErrorNotice error={error} />
    </form>
  );
}

function EditProjectDialog({
  project,
  onClose,
  onSaved,
}: {
  project: Project | null;
  onClose: () => void;
  onSaved: (project: Project) => void;
}) {
  const [name, setName] = useState('');
  const [models, setModels] = useState('');
  const [error, setError] = useState<Error>();
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    setName(project?.name ?? '');
    setModels(project?.models?.join(', ') ?? '');
    setError(undefined);
  }, [project]);
  async function save() {
    if (project === null) return;
    setBusy(true);
    setError(undefined);
    try {
      const saved = await projectsApi.update(project.id, { name: name.trim(), models: modelList(models) });
      onSaved(saved.project);
    } catch (reason) {
      setError(reason as Error);
    } finally {
      setBusy(false);
    }
  }
  return (
    <Dialog
      title={`Edit “${project?.name ?? ''}”`}
      open={project !== null}
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
        <label htmlFor="edit-project-name">Name</label>
        <input
          id="edit-project-name"
          className="input"
          required
          maxLength={100}
          value={name}
          onChange={(event) => setName(event.target.value)}
        />
      </div>
      <div className="field">
        <label htmlFor="edit-project-models">Models allowed</label>
        <input
          id="edit-project-models"
          className="input"
          placeholder="Every model"
          aria-describedby="edit-project-models-help"
          value={models}
          onChange={(event) => setModels(event.target.value)}
        />
        <p id="edit-project-models-help" className="small muted">
          Model ids or families, separated by commas; empty for every model. Applies from each key's next request.
        </p>
      </div>
      <ErrorNotice error={error} />
    </Dialog>
  );
}

function ProjectsTable({
  caption,
  projects,
  keyCounts,
  onEdit,
  onArchive,
}: {
  caption: string;
  projects: Project[];
  keyCounts: ReadonlyMap<string, number>;
  onEdit?: (project: Project) => void;
  onArchive?: (project: Project) => void;
}) {
  return (
    <div className="table-wrap" tabIndex={0} role="region" aria-label={`${caption}, scrollable`}>
      <table className="table table-stack">
        <caption className="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Models allowed</th>
            <th scope="col" className="num">
              Active keys
            </th>
            <th scope="col">Created</th>
            <th scope="col">Status</th>
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {projects.map((project) => (
            <tr key={project.id}>
              <th scope="row" className="key-name">
                {project.name}
              </th>
              <td data-label="Models allowed" className="small">
                {describeModels(project.models)}
              </td>
              <td data-label="Active keys" className="num">
                {keyCounts.get(project.id) ?? 0}
              </td>
              <td data-label="Created" title={formatDateTime(project.createdAt)}>
                {formatDate(project.createdAt)}
              </td>
              <td data-label="Status">
                {project.archivedAt !== null ? (
                  <StatusBadge status="revoked" label="archived" />
                ) : project.isDefault ? (
                  <StatusBadge status="active" label="default" />
                ) : (
                  <StatusBadge status="active" />
                )}
              </td>
              <td className="actions">
                {project.archivedAt === null && onEdit !== undefined && (
                  <button
                    type="button"
                    className="button button-secondary button-small"
                    aria-label={`Edit ${project.name}`}
                    onClick={() => onEdit(project)}
                  >
                    Edit
                  </button>
                )}
                {project.archivedAt === null && !project.isDefault && onArchive !== undefined && (
                  <button
                    type="button"
                    className="button button-danger-outline button-small"
                    aria-label={`Archive ${project.name}`}
                    onClick={() => onArchive(project)}
                  >
                    Archive
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** The organisation's projects: groups of keys, each with a model allowlist that narrows its keys'. */
export function ProjectsPage() {
  const { current } = useOrganisation();
  const canManage = useCan('limits:manage');
  const list = useAsync(() => projectsApi.list(true), []);
  const keyList = useAsync(keysApi.list, []);
  const [editing, setEditing] = useState<Project | null>(null);
  const [archiving, setArchiving] = useState<Project | null>(null);
  const [busy, setBusy] = useState(false);
  const [archiveError, setArchiveError] = useState<Error>();
  const [message, setMessage] = useState<string>();

  const keyCounts = new Map<string, number>();
  for (const key of keyList.data?.keys ?? [])
    if (key.status === 'active') keyCounts.set(key.projectId, (keyCounts.get(key.projectId) ?? 0) + 1);
  const all = list.data?.projects ?? [];
  const live = all.filter((project) => project.archivedAt === null);
  const archived = all.filter((project) => project.archivedAt !== null);

  async function archive() {
    if (archiving === null) return;
    setBusy(true);
    setArchiveError(undefined);
    try {
      await projectsApi.archive(archiving.id);
      setMessage(`Project “${archiving.name}” was archived; its keys now get 401.`);
      setArchiving(null);
      list.reload();
    } catch (reason) {
      setArchiveError(reason as Error);
    } finally {
      setBusy(false);
    }
  }

  return (
    <>
      <PageHeader
        title="Projects"
        description="Projects group API keys. A project's model allowlist applies to every key in it, on top of the key's own."
      />
      {canManage ? (
        <CreateProjectForm
          onCreated={(project) => {
            setMessage(`Project “${project.name}” was created. Choose it when you create a key.`);
            list.reload();
          }}
        />
      ) : (
        <Notice kind="info">{roleReason(current?.role, 'creating or changing projects')}</Notice>
      )}
      {message !== undefined && <Notice kind="success">{message}</Notice>}
      <section className="card section" aria-labelledby="projects-heading">
        <h2 id="projects-heading">Projects</h2>
        <ErrorNotice error={list.error} />
        {list.loading && list.data === undefined && <Loading />}
        {live.length > 0 && (
          <ProjectsTable
            caption="Projects"
            projects={live}
            keyCounts={keyCounts}
            {...(canManage ? { onEdit: setEditing, onArchive: setArchiving } : {})}
          />
        )}
        {archived.length > 0 && (
          <details className="inactive-keys">
            <summary>Archived projects ({archived.length})</summary>
            <ProjectsTable caption="Archived projects" projects={archived} keyCounts={keyCounts} />
          </details>
        )}
      </section>
      <EditProjectDialog
        project={editing}
        onClose={() => setEditing(null)}
        onSaved={(project) => {
          setEditing(null);
          setMessage(`Project “${project.name}” was updated; the change applies from each key's next request.`);
          list.reload();
        }}
      />
      <ConfirmDialog
        title="Archive this project?"
        open={archiving !== null}
        confirmLabel="Archive project"
        danger
        busy={busy}
        onConfirm={archive}
        onCancel={() => {
          setArchiving(null);
          setArchiveError(undefined);
        }}
      >
        <p>
          <strong>{archiving?.name}</strong> and its {keyCounts.get(archiving?.id ?? '') ?? 0} active keys stop working
          immediately: requests with them get 401 errors. This cannot be undone.
        </p>
        <ErrorNotice error={archiveError} />
      </ConfirmDialog>
    </>
  );
}
