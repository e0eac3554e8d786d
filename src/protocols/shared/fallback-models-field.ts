import { z } from 'zod';
import type { CanonicalRequest } from '../../canonical/request.js';

/**
 * Tollgate's per-request fallback list (OpenRouter's `models` shape), a body field on every client protocol: models
 * tried in order after the request's own when its vendor fails before the first byte. Eight at most: each is its
 * own upstream call the client waits for.
 */
export const fallbackModelsField = z.array(z.string().min(1)).min(1).max(8).optional();

/** Google names a model `models/<id>` (as its paths do); the bare id is accepted too. */
const GOOGLE_MODEL_PREFIX = 'models/';

/**
 * Sets `request.fallbackModels` from the body's `models`. A client may list the request's own model first (as
 * OpenRouter's callers do); it is left out here, and the pipeline checks every other name against the catalog.
 */
export function applyFallbackModels(
  request: CanonicalRequest,
  models: readonly string[] | undefined,
  options: { googleNames?: boolean } = {},
): void {
  if (models === undefined) return;
  const names = options.googleNames === true ? models.map(withoutGooglePrefix) : [...models];
  const fallbacks = names.filter((model) => model !== request.model);
  if (fallbacks.length > 0) request.fallbackModels = fallbacks;
}

function withoutGooglePrefix(name: string): string {
  return name.startsWith(GOOGLE_MODEL_PREFIX) ? name.slice(GOOGLE_MODEL_PREFIX.length) : name;
}
