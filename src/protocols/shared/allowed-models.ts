import type { FastifyRequest } from 'fastify';
import type { CatalogModel, ModelCatalog } from '../../catalog/model-catalog.js';
import { modelAllowed } from '../../keys/key-permissions.js';

/** The catalog's models the request's key may use (all of them without an allowlist), for every models list. */
export function allowedModels(catalog: ModelCatalog, request: FastifyRequest): readonly CatalogModel[] {
  const permissions = request.auth!.key.permissions;
  return permissions.models === null
    ? catalog.models
    : catalog.models.filter((model) => modelAllowed(permissions, model));
}
