import type { FastifyInstance, FastifyRequest } from 'fastify';
import { GatewayError } from '../canonical/errors.js';
import type { CatalogModel, ModelCatalog } from '../catalog/model-catalog.js';
import { assertKeyMayUseModel } from '../keys/key-permissions.js';
import { findGeminiModel, listGeminiModels, presentGeminiModel } from '../protocols/gemini-generate/gemini-models.js';
import { allowedModels } from '../protocols/shared/allowed-models.js';
import { capabilitiesOf, pricingOf } from '../protocols/shared/model-facts.js';
import { isGoogleClient } from './request-context.js';

/** Stable `created` stamp: the catalog has no release dates, and clients only sort or display it. */
const CATALOG_CREATED = 1_767_225_600;

/**
 * `GET /v1/models`: OpenAI's list shape by default, Anthropic's page shape
 * (docs/protocols/wire-anthropic.md#models-list) when the caller is an Anthropic client (it always sends
 * `anthropic-version`), so both SDKs' `models.list()` work.
 */
export function registerModelsApi(app: FastifyInstance, catalog: ModelCatalog): void {
  // @google/genai lists and gets models under /v1 (its other calls go to /v1beta): Google's shape for it. Every key
  // may list (scope `any`); a key with a model allowlist sees only the models it may use, in every shape.
  app.get<{ Querystring: { pageSize?: string; pageToken?: string } }>(
    '/v1/models',
    { config: { googleClients: true, scope: 'any' } },
    async (request) => {
      const models = allowedModels(catalog, request);
      if (isGoogleClient(request)) return listGeminiModels(models, request.query.pageSize, request.query.pageToken);
      if (!isAnthropicClient(request)) return { object: 'list', data: models.map(presentOpenAIModel) };
      const data = models.map(presentAnthropicModel);
      return { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data[data.length - 1]?.id ?? null };
    },
  );

  app.get<{ Params: { id: string } }>(
    '/v1/models/:id',
    { config: { googleClients: true, scope: 'any' } },
    async (request) => {
      if (isGoogleClient(request)) {
        const model = findGeminiModel(catalog, request.params.id);
        assertKeyMayUseModel(request.auth!, model);
        return presentGeminiModel(model);
      }
      const model = catalog.lookup(request.params.id);
      if (model === undefined)
        throw new GatewayError('not_found', `The model '${request.params.id}' does not exist.`, { param: 'id' });
      assertKeyMayUseModel(request.auth!, model);
      return isAnthropicClient(request) ? presentAnthropicModel(model) : presentOpenAIModel(model);
    },
  );
}

function isAnthropicClient(request: FastifyRequest): boolean {
  return request.headers['anthropic-version'] !== undefined;
}

function presentOpenAIModel(model: CatalogModel) {
  return {
    id: model.id,
    object: 'model',
    created: CATALOG_CREATED,
    owned_by: `tollgate-${model.family}`,
    family: model.family,
    description: model.description,
    context_window: model.contextWindow,
    max_output_tokens: model.maxOutputTokens,
    // Extra fields beside OpenAI's four: its SDKs keep unknown fields, so `models.list()` still parses.
    pricing: { currency: 'USD', unit: 'per_million_tokens', ...pricingOf(model) },
    capabilities: capabilitiesOf(model),
  };
}

const SUPPORTED = { supported: true } as const;
const UNSUPPORTED = { supported: false } as const;

function support(supported: boolean): { supported: boolean } {
  return supported ? SUPPORTED : UNSUPPORTED;
}

/**
 * Anthropic's `ModelCapabilities`, every field the newest SDK declares, as this gateway serves the model through
 * `/v1/messages` (docs/protocols/anthropic-messages.md): server tools and PDFs relayed to alpha models; web search
 * translated for beta and gamma; batches, code execution and context management not offered.
 */
function anthropicCapabilities(model: CatalogModel) {
  const flags = capabilitiesOf(model);
  const alpha = model.family === 'alpha';
  const webSearch = model.family !== 'delta';
  return {
    batch: UNSUPPORTED,
    citations: support(webSearch),
    code_execution: support(alpha),
    context_management: {
      supported: false,
      clear_thinking_20251015: null,
      clear_tool_uses_20250919: null,
      compact_20260112: null,
    },
    effort: {
      supported: flags.reasoning,
      low: support(flags.reasoning),
      medium: support(flags.reasoning),
      high: support(flags.reasoning),
      max: support(flags.reasoning),
      xhigh: null,
    },
    image_input: support(flags.images),
    pdf_input: support(model.family === 'alpha' || model.family === 'beta' || model.family === 'gamma'),
    server_tools: { supported: webSearch, code_execution: support(alpha), web_search: support(webSearch) },
    structured_outputs: support(flags.structured_output),
    thinking: {
      supported: flags.reasoning,
      types: {
        adaptive: support(alpha),
        between_tools: support(alpha),
        disabled: SUPPORTED,
        enabled: support(flags.reasoning),
      },
    },
  };
}

/** Anthropic's `ModelInfo`, every field the newest SDK declares: the window in `max_input_tokens`. */
function presentAnthropicModel(model: CatalogModel) {
  return {
    type: 'model',
    id: model.id,
    display_name: model.id,
    created_at: new Date(CATALOG_CREATED * 1000).toISOString(),
    max_input_tokens: model.contextWindow,
    max_tokens: model.maxOutputTokens,
    capabilities: anthropicCapabilities(model),
    lifecycle: 'active',
    line: null,
    deprecated_at: null,
    retires_at: null,
  };
}
