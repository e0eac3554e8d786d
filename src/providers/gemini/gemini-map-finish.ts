import type { FinishReason } from '../../canonical/events.js';

/**
 * Gemini `finishReason` → canonical finish reason (docs/protocols/translation.md#stop-reasons-and-finish-reasons).
 * Gemini has no "tool call" reason: a reply that called functions ends with STOP, so `sawFunctionCall` (any call in the
 * whole response, whichever chunk carried it: docs/protocols/translation.md#gemini-stop-after-tool-calls) turns every
 * reason that would read as a plain stop into `tool-calls`. A filter or the token limit still wins: the client must
 * know the reply was cut or blocked.
 *
 * Policies: RECITATION and LANGUAGE count as content filtering (Portkey reads RECITATION as stop; the reply
 * was withheld for a policy reason, which is what content-filter tells a client). The malformed / unexpected /
 * too-many tool-call reasons and every unknown value are `other`, the raw value travelling beside it.
 */
const FINISH_REASONS: Readonly<Record<string, FinishReason>> = {
  STOP: 'stop',
  MAX_TOKENS: 'length',
  SAFETY: 'content-filter',
  PROHIBITED_CONTENT: 'content-filter',
  BLOCKLIST: 'content-filter',
  SPII: 'content-filter',
  IMAGE_SAFETY: 'content-filter',
  IMAGE_PROHIBITED_CONTENT: 'content-filter',
  RECITATION: 'content-filter',
  IMAGE_RECITATION: 'content-filter',
  LANGUAGE: 'content-filter',
};

export function mapGeminiFinishReason(reason: string, sawFunctionCall: boolean): FinishReason {
  const mapped = FINISH_REASONS[reason] ?? 'other';
  return sawFunctionCall && (mapped === 'stop' || mapped === 'other') ? 'tool-calls' : mapped;
}
