import { upstreamError } from '../upstream-errors.js';
import { buildOpenAIRequest } from './openai-build-request.js';
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
  requestIdHeaders: ['x-request-id'],
  mapError: upstreamError,
};

/** The OpenAI Chat Completions adapter (the beta family). */
export class OpenAIProvider extends OpenAICompatibleProvider {
  constructor(options: OpenAIProviderOptions) {
    super(options, OPENAI_DIALECT);
  }
}
