import { GatewayError } from '../canonical/errors.js';
import type { CanonicalRequest } from '../canonical/request.js';
import type { CatalogModel, ModelCapability } from '../catalog/model-catalog.js';

/** What of a request each capability covers, for the refusal's wording. */
const NEEDS: Readonly<Record<ModelCapability, string>> = {
  vision: 'image or document input',
  tools: 'tools',
  webSearch: 'server-side tools such as web search',
};

/**
 * The capabilities a request needs that the model's entry does not list: a 400 naming them, before anything is held
 * or sent. A model without a `capabilities` list (the listed eleven, by default) is not restricted here; its
 * vendor's own rules still apply.
 */
export function assertModelCapabilities(request: CanonicalRequest, model: CatalogModel): void {
  if (model.capabilities === undefined) return;
  const missing = neededCapabilities(request).filter((capability) => !model.capabilities!.includes(capability));
  if (missing.length === 0) return;
  throw new GatewayError(
    'invalid_request',
    `The model '${model.id}' does not accept ${missing.map((capability) => NEEDS[capability]).join(' or ')}.`,
    { param: 'model' },
  );
}

/** Whether the model accepts what the request needs (a fallback must, to be taken). */
export function modelAccepts(request: CanonicalRequest, model: CatalogModel): boolean {
  return (
    model.capabilities === undefined ||
    neededCapabilities(request).every((capability) => model.capabilities!.includes(capability))
  );
}

function neededCapabilities(request: CanonicalRequest): ModelCapability[] {
  const needed: ModelCapability[] = [];
  const media = request.messages.some((message) =>
    message.content.some((block) => block.type === 'image' || block.type === 'document'),
  );
  if (media) needed.push('vision');
  if ((request.tools?.length ?? 0) > 0) needed.push('tools');
  if ((request.serverTools?.length ?? 0) > 0) needed.push('webSearch');
  return needed;
}
