import { GatewayError } from '../../canonical/errors.js';
import type { CatalogModel, ModelCatalog } from '../../catalog/model-catalog.js';
import { capabilitiesOf, describePricing, pricingOf } from '../shared/model-facts.js';
import type { GeminiListModelsResponse, GeminiModel } from '../../wire/gemini-generate-wire.js';

/*
 * The catalog in Google's shapes: the list (`GET /v1beta/models`, and `/v1/models` for Google clients), one model,
 * and the model a path names.
 */

/** A public model id from the path: `gamma-2.5-pro`, `models/gamma-2.5-pro`; anything else is Google's 404. */
export function findGeminiModel(catalog: ModelCatalog, segment: string): CatalogModel {
  const id = segment.replace(/^(?:models|tunedModels)\//, '');
  const model = catalog.lookup(id);
  if (model === undefined) {
    throw new GatewayError(
      'not_found',
      `models/${id} is not found for this gateway. Call GET /v1beta/models for the models it serves.`,
      { param: 'model' },
    );
  }
  return model;
}

const DEFAULT_PAGE_SIZE = 50;
const MAX_PAGE_SIZE = 1000;

/** Google's paging: `pageSize` (default 50, at most 1000) and an opaque `pageToken` (here the offset). */
export function listGeminiModels(
  models: readonly CatalogModel[],
  pageSize: string | undefined,
  pageToken: string | undefined,
): GeminiListModelsResponse {
  const size = pageSize === undefined || pageSize === '' ? DEFAULT_PAGE_SIZE : Number(pageSize);
  if (!Number.isInteger(size) || size < 0)
    throw new GatewayError('invalid_request', "'pageSize' must be a non-negative integer.", { param: 'pageSize' });
  const limit = Math.min(size === 0 ? DEFAULT_PAGE_SIZE : size, MAX_PAGE_SIZE);
  const offset = pageToken === undefined || pageToken === '' ? 0 : Number(pageToken);
  if (!Number.isInteger(offset) || offset < 0)
    throw new GatewayError('invalid_request', "'pageToken' is not a token this gateway gave.", { param: 'pageToken' });
  const page = models.slice(offset, offset + limit).map(presentGeminiModel);
  return offset + limit < models.length ? { models: page, nextPageToken: String(offset + limit) } : { models: page };
}

/** A catalog model in Google's `Model` shape, with its token limits; its prices in the description (no field for them). */
export function presentGeminiModel(model: CatalogModel): GeminiModel {
  return {
    name: `models/${model.id}`,
    baseModelId: model.id,
    version: '001',
    displayName: model.id,
    description: `${model.description} (${model.family} family, served by Tollgate; ${describePricing(pricingOf(model))})`,
    inputTokenLimit: model.contextWindow,
    outputTokenLimit: model.maxOutputTokens,
    supportedGenerationMethods: ['generateContent', 'streamGenerateContent', 'countTokens'],
    temperature: 1,
    maxTemperature: 2,
    topP: 0.95,
    thinking: capabilitiesOf(model).reasoning,
  };
}
