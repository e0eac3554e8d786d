import type { FastifyInstance } from 'fastify';
import type { CatalogModel } from '../../catalog/model-catalog.js';
import { capabilitiesOf, pricingOf } from '../../protocols/shared/model-facts.js';
import type { DashboardDependencies } from './dashboard-dependencies.js';

/**
 * `GET /api/models`: every model the signed-in account may use (an account has no model allowlist, its keys may),
 * with prices per 1M tokens as exact decimal USD strings and what each can do: the Models page and the playground's
 * model picker.
 */
export function registerModelsRoutes(api: FastifyInstance, deps: DashboardDependencies): void {
  api.get('/models', { config: { permission: 'organisation:read' } }, async () => {
    return { models: deps.catalog.models.map(presentModel) };
  });
}

function presentModel(model: CatalogModel) {
  const pricing = pricingOf(model);
  const capabilities = capabilitiesOf(model);
  return {
    id: model.id,
    family: model.family,
    description: model.description,
    contextWindow: model.contextWindow,
    maxOutputTokens: model.maxOutputTokens,
    pricing: {
      inputUsd: pricing.input,
      outputUsd: pricing.output,
      cacheReadUsd: pricing.cache_read,
      cacheWriteUsd: pricing.cache_write,
      cacheWrite1hUsd: pricing.cache_write_1h,
      webSearchUsd: pricing.web_search_per_request ?? null,
    },
    capabilities: {
      tools: capabilities.tools,
      images: capabilities.images,
      reasoning: capabilities.reasoning,
      structuredOutput: capabilities.structured_output,
    },
  };
}
