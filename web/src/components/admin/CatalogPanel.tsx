import { useState } from 'react';
import { ApiError } from '../../api/client';
import { admin } from '../../api/endpoints';
import type { CatalogModelEntry, CatalogSection, CatalogView } from '../../api/types';
import { useAsync } from '../../lib/use-async';
import { ErrorNotice, Loading, Notice } from '../Notice';
import { blankDraft, CatalogEntryForm, type CatalogDraft } from './CatalogEntryForm';

/**
 * The running catalog (models, aliases, deployments, each with where it comes from) and the operator's edits:
 * stored in the database and applied by every instance without a restart.
 */
export function CatalogPanel() {
  const loaded = useAsync(admin.catalog, []);
  const [view, setView] = useState<CatalogView>();
  const [draft, setDraft] = useState<CatalogDraft>(() => blankDraft('models'));
  const [actionError, setActionError] = useState<string>();
  if (loaded.error instanceof ApiError && loaded.error.status === 404)
    return <p className="muted">Catalog editing is not available on this gateway.</p>;
  if (loaded.error !== undefined) return <ErrorNotice error={loaded.error} />;
  const catalog = view ?? loaded.data;
  if (catalog === undefined) return <Loading />;

  async function act(change: () => Promise<CatalogView>) {
    setActionError(undefined);
    try {
      setView(await change());
    } catch (reason) {
      setActionError((reason as Error).message);
    }
  }
  function retire(model: CatalogModelEntry) {
    const replacement = window.prompt(`Retire ${model.id}. Model that replaces it (empty: none):`, '');
    if (replacement === null) return;
    void act(() => admin.retireModel(model.id, replacement.trim() === '' ? null : replacement.trim()));
  }
  function remove(section: CatalogSection, id: string) {
    void act(() => admin.deleteCatalogEntry(section, id));
  }

  return (
    <>
      <p className="muted">
        Revision {catalog.revision}. Built-in models, then tollgate.yaml, then the entries stored here (they win).
      </p>
      {actionError !== undefined && <Notice kind="error">{actionError}</Notice>}
      <h3>Models</h3>
      <div className="table-wrap" tabIndex={0} role="region" aria-label="Catalog models, scrollable">
        <table className="table table-dense table-stack">
          <caption className="visually-hidden">Catalog models</caption>
          <thead>
            <tr>
              <th scope="col">Model</th>
              <th scope="col">Family</th>
              <th scope="col">Source</th>
              <th scope="col" className="num">
                Input / output per 1M
              </th>
              <th scope="col">Status</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {catalog.models.map((model) => (
              <tr key={model.id}>
                <th scope="row" className="mono break">
                  {model.id}
                </th>
                <td data-label="Family">{model.family}</td>
                <td data-label="Source">{model.source}</td>
                <td data-label="Prices" className="num">
                  ${model.pricing.inputUsd} / ${model.pricing.outputUsd}
                </td>
                <td data-label="Status">
                  {model.retired ? `retired${model.replacement === null ? '' : ` → ${model.replacement}`}` : 'served'}
                </td>
                <td className="actions">
                  <button
                    type="button"
                    className="button button-secondary button-small"
                    aria-label={`Edit ${model.id}`}
                    onClick={() => setDraft({ section: 'models', id: model.id, entry: model.entry ?? {} })}
                  >
                    Edit
                  </button>{' '}
                  {!model.retired && (
                    <button
                      type="button"
                      className="button button-danger-outline button-small"
                      aria-label={`Retire ${model.id}`}
                      onClick={() => retire(model)}
                    >
                      Retire
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <h3>Aliases</h3>
      {catalog.aliases.length === 0 ? (
        <p className="muted">No aliases.</p>
      ) : (
        <ul className="catalog-list">
          {catalog.aliases.map((alias) => (
            <li key={alias.name}>
              <span className="mono break">{alias.name}</span> → <span className="mono">{alias.model}</span>
              {alias.fallbacks.length > 0 && <span className="muted small"> then {alias.fallbacks.join(', ')}</span>}
              <span className="muted small"> ({alias.source})</span>
              {alias.source === 'database' && (
                <button
                  type="button"
                  className="button button-danger-outline button-small"
                  aria-label={`Delete alias ${alias.name}`}
                  onClick={() => remove('aliases', alias.name)}
                >
                  Delete
                </button>
              )}
            </li>
          ))}
        </ul>
      )}
      <h3>Deployments</h3>
      {catalog.deployments.length === 0 ? (
        <p className="muted">No deployments: each family is served by its vendor's settings.</p>
      ) : (
        <ul className="catalog-list">
          {catalog.deployments.map((deployment) => (
            <li key={deployment.name}>
              <span className="mono">{deployment.name}</span> ({deployment.family}){' '}
              <span className="mono small break">{deployment.baseUrl}</span>
              {deployment.apiKeyEnv !== undefined && (
                <span className="muted small"> key in ${deployment.apiKeyEnv}</span>
              )}
              <span className="muted small"> ({deployment.source})</span>
              {deployment.source === 'database' && (
                <button
                  type="button"
                  className="button button-danger-outline button-small"
                  aria-label={`Delete deployment ${deployment.name}`}
                  onClick={() => remove('deployments', deployment.name)}
                >
                  Delete
                </button>
              )}
            </li>
          ))}
        </ul>
      )}
      <CatalogEntryForm draft={draft} onSaved={setView} />
    </>
  );
}
