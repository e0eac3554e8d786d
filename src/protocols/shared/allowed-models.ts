import type { FastifyRequest } from 'fastify';
import type { CatalogModel, ModelCatalog } from '../../catalog/model-catalog.js';
import { keyMayUseModel } from '../../keys/key-permissions.js';

/**
 * The catalog's models the request's key may use (all of them when neither the key nor its project has an
 * allowlist), for every models list.
 */
export function allowedModels(catalog: ModelCatalog, request: FastifyRequest): readonly CatalogModel[] {
  const auth = request.auth!;
  return auth.key.permissions.models === null && auth.project.models === null
    ? catalog.models
    : catalog.models.filter((model) => keyMayUseModel(auth, model));
}
