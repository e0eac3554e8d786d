import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { GatewayError, invalidRequest } from '../../canonical/errors.js';
import type { CatalogModel, ModelCatalog } from '../../catalog/model-catalog.js';
import type { Config } from '../../config/load-config.js';
import { CatalogEntryNotFound, type CatalogEditor } from '../../config/catalog-editor.js';
import { CatalogEntryError } from '../../config/catalog-entries.js';
import { pricingOf } from '../../protocols/shared/model-facts.js';
import {
  CatalogRevisionConflict,
  type CatalogEntryKind,
  type CatalogSnapshot,
} from '../../storage/catalog-entry-types.js';
import { parseInput } from './body-parsing.js';
import type { DashboardDependencies } from './dashboard-dependencies.js';
import { notFound } from './dashboard-error.js';
import { currentAccount } from './dashboard-session.js';

const ADMIN = { config: { access: 'admin' as const } };
const KINDS: Readonly<Record<string, CatalogEntryKind>> = {
  models: 'model',
  aliases: 'alias',
  deployments: 'deployment',
};
type EntryParams = { Params: { section: string; id: string } };
const retireBody = z.object({ replacement: z.string().min(1).max(128).nullish() }).strict();
const historyQuery = z.object({ limit: z.coerce.number().int().min(1).max(500).default(50) }).strict();

/**
 * The operator's catalog (role `admin`): the running models, aliases and deployments with where each comes from,
 * and edits stored in the database (add or replace, retire, delete, clear a chain) that every instance applies
 * without a restart. An edit is checked against the whole catalog it makes before it is stored: a bad one is a 400
 * naming the entry and field, and nothing changes.
 */
export function registerCatalogRoutes(api: FastifyInstance, deps: DashboardDependencies): void {
  const editor = (): CatalogEditor => {
    if (deps.catalogEditor === undefined) throw notFound('Catalog editing is not available on this gateway.');
    return deps.catalogEditor;
  };
  const actor = (request: Parameters<typeof currentAccount>[0]) => currentAccount(request).email;

  api.get('/admin/catalog', ADMIN, async () =>
    presentCatalog(deps.catalog, editor().fileConfig(), await editor().snapshot()),
  );

  api.get('/admin/catalog/history', ADMIN, async (request) => {
    const { limit } = parseInput(historyQuery, request.query);
    return { changes: await editor().history(limit) };
  });

  api.put<EntryParams>('/admin/catalog/:section/:id', ADMIN, async (request) => {
    const kind = kindOf(request.params.section);
    const body = request.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw invalidRequest('The body must be the entry as a JSON object, as tollgate.yaml would hold it.');
    const snapshot = await edit(() =>
      editor().put(kind, request.params.id, body as Record<string, unknown>, actor(request)),
    );
    return presentCatalog(deps.catalog, editor().fileConfig(), snapshot);
  });

  api.post<EntryParams>('/admin/catalog/:section/:id/retire', ADMIN, async (request) => {
    if (kindOf(request.params.section) !== 'model') throw notFound('Only models are retired.');
    const { replacement } = parseInput(retireBody, request.body ?? {});
    const snapshot = await edit(() => editor().retire(request.params.id, replacement ?? undefined, actor(request)));
    return presentCatalog(deps.catalog, editor().fileConfig(), snapshot);
  });

  api.delete<EntryParams>('/admin/catalog/:section/:id/fallbacks', ADMIN, async (request) => {
    const kind = kindOf(request.params.section);
    if (kind === 'deployment') throw notFound('Deployments have no fallback chain.');
    const snapshot = await edit(() => editor().removeChain(kind, request.params.id, actor(request)));
    return presentCatalog(deps.catalog, editor().fileConfig(), snapshot);
  });

  api.delete<EntryParams>('/admin/catalog/:section/:id', ADMIN, async (request) => {
    const kind = kindOf(request.params.section);
    const snapshot = await edit(() => editor().remove(kind, request.params.id, actor(request)));
    return presentCatalog(deps.catalog, editor().fileConfig(), snapshot);
  });
}

function kindOf(section: string): CatalogEntryKind {
  const kind = KINDS[section];
  if (kind === undefined) throw notFound(`No catalog section '${section}': models, aliases or deployments.`);
  return kind;
}

/** An edit's refusals in the dashboard's shape: the entry and field named, nothing changed. */
async function edit(change: () => Promise<CatalogSnapshot>): Promise<CatalogSnapshot> {
  try {
    return await change();
  } catch (error) {
    if (error instanceof CatalogEntryError) throw invalidRequest(error.message, error.field);
    if (error instanceof CatalogEntryNotFound) throw notFound(error.message);
    if (error instanceof CatalogRevisionConflict)
      throw new GatewayError('conflict', 'The catalog is being changed by others: try again.');
    throw error;
  }
}

type Source = 'built-in' | 'file' | 'database';

function presentCatalog(catalog: ModelCatalog, file: Config, snapshot: CatalogSnapshot) {
  const stored = (kind: CatalogEntryKind, id: string) =>
    snapshot.entries.find((entry) => entry.kind === kind && entry.id === id);
  const fileModels = file.models;
  const fileAliases = file.aliases;
  const fileDeployments = file.deployments;
  const sourceOf = (kind: CatalogEntryKind, id: string, inFile: boolean): Source =>
    stored(kind, id) !== undefined ? 'database' : inFile ? 'file' : 'built-in';
  const deploymentNames = new Set([
    ...Object.keys(fileDeployments),
    ...snapshot.entries.filter((entry) => entry.kind === 'deployment').map((entry) => entry.id),
  ]);
  return {
    revision: snapshot.revision,
    models: catalog.allModels.map((model) => ({
      ...presentModel(model),
      source: sourceOf('model', model.id, fileModels[model.id] !== undefined),
      stored: stored('model', model.id)?.document ?? null,
      // What an edit starts from: the stored entry, else tollgate.yaml's (an edit replaces it whole).
      entry: stored('model', model.id)?.document ?? fileModels[model.id] ?? null,
    })),
    aliases: [...catalog.aliases].map(([name, model]) => ({
      name,
      model,
      fallbacks: fileAliasesOrStored(stored('alias', name)?.document, fileAliases[name]?.fallbacks),
      source: sourceOf('alias', name, fileAliases[name] !== undefined),
    })),
    // A file deployment's keys are never shown; a stored one names only the variables that hold them.
    deployments: [...deploymentNames].sort().map((name) => {
      const entry = stored('deployment', name);
      const file = fileDeployments[name];
      return entry !== undefined
        ? { name, source: 'database' as const, ...entry.document }
        : {
            name,
            source: 'file' as const,
            family: file!.family,
            baseUrl: file!.baseUrl,
            weight: file!.weight,
            ...(file!.rpm === undefined ? {} : { rpm: file!.rpm }),
            ...(file!.maxConcurrent === undefined ? {} : { maxConcurrent: file!.maxConcurrent }),
          };
    }),
  };
}

function fileAliasesOrStored(
  document: Readonly<Record<string, unknown>> | undefined,
  file: readonly string[] | undefined,
): readonly string[] {
  if (document !== undefined) return (document.fallbacks as readonly string[] | undefined) ?? [];
  return file ?? [];
}

function presentModel(model: CatalogModel) {
  const pricing = pricingOf(model);
  return {
    id: model.id,
    family: model.family,
    description: model.description,
    upstreamModel: model.upstreamModel,
    contextWindow: model.contextWindow,
    maxOutputTokens: model.maxOutputTokens,
    pricing: {
      inputUsd: pricing.input,
      outputUsd: pricing.output,
      cacheReadUsd: pricing.cache_read,
      cacheWriteUsd: pricing.cache_write,
    },
    deployments: model.deployments ?? [],
    retired: model.retired !== undefined,
    replacement: model.retired?.replacement ?? null,
  };
}
