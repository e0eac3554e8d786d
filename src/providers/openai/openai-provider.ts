import { upstreamError } from '../upstream-errors.js';
import { buildOpenAIRequest } from './openai-build-request.js';
import { requestedWebSearch, webSearchQuery } from './openai-web-search.js';
import {
  OpenAICompatibleProvider,
  type OpenAIDialect,
  type ProviderEndpointOptions,
} from './openai-compatible-provider.js';

/** Base URL ending in /v1, as the OpenAI SDK's OPENAI_BASE_URL. */
export type OpenAIProviderOptions = ProviderEndpointOptions;

const OPENAI_DIALECT: OpenAIDialect = {
  vendor: 'openai',
  defaultLabel: 'OpenAI',
  buildRequest: buildOpenAIRequest,
  // Chat Completions searches the web only on a search model: a request with a web search goes there.
  upstreamModel: (request, model) =>
    requestedWebSearch(request) === undefined
      ? model.upstreamModel
      : (model.webSearchUpstreamModel ?? model.upstreamModel),
  replyOptions: (request) =>
    requestedWebSearch(request) === undefined ? {} : { webSearchQuery: webSearchQuery(request) },
  requestIdHeaders: ['x-request-id'],
  mapError: upstreamError,
};

/** The OpenAI Chat Completions adapter (the beta family). */
export class OpenAIProvider extends OpenAICompatibleProvider {
  constructor(options: OpenAIProviderOptions) {
    super(options, OPENAI_DIALECT);
  }
}
