import type { FastifyInstance } from 'fastify';
import { GatewayError } from '../canonical/errors.js';
import type { CatalogModel, ModelCatalog } from '../catalog/model-catalog.js';

/** Stable `created` stamp: the catalog has no release dates, and clients only sort or display it. */
const CATALOG_CREATED = 1_767_225_600;

/** `GET /v1/models` in OpenAI's list shape (openai-chat.md §7). */
export function registerModelsApi(app: FastifyInstance, catalog: ModelCatalog): void {
  app.get('/v1/models', async () => ({ object: 'list', data: catalog.models.map(presentModel) }));

  app.get<{ Params: { id: string } }>('/v1/models/:id', async (request) => {
    const model = catalog.find(request.params.id);
    if (model === undefined) throw new GatewayError('not_found', `The model '${request.params.id}' does not exist.`, { param: 'id' });
    return presentModel(model);
  });
}

function presentModel(model: CatalogModel) {
  return {
    id: model.id,
    object: 'model',
    created: CATALOG_CREATED,
    owned_by: `tollgate-${model.family}`,
    family: model.family,
    description: model.description,
    context_window: model.contextWindow,
    max_output_tokens: model.maxOutputTokens,
  };
}
