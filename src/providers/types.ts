import type { CanonicalEvent } from '../canonical/events.js';
import type { CanonicalRequest, VendorName } from '../canonical/request.js';
import type { CatalogModel } from '../catalog/model-catalog.js';

export interface ProviderCall {
  request: CanonicalRequest;
  model: CatalogModel;
  /** Aborted when the client goes away: the upstream request is cancelled with it. */
  signal: AbortSignal;
  requestId: string;
  /**
   * Names the conversation (a hash of the API key's id and the prompt's stable prefix; never a secret or prompt
   * text): the requests of one conversation go to the same credential, and vendors with a prompt-cache key get it.
   * May be computed on first read.
   */
  readonly affinityKey?: string;
  /** The request's trace, when tracing is on: each upstream attempt is a span of it. */
  readonly trace?: UpstreamTrace;
}

/** One attempt on one credential, as its trace span names it. */
export interface UpstreamAttempt {
  vendor: VendorName;
  /** The credential's label (never the key). */
  credential: string;
  /** 1 for the first attempt of a model, 2 for its first retry, … */
  number: number;
  upstreamModel: string;
}

/**
 * A request's upstream attempts as trace spans (implemented in src/telemetry). Attempts are sequential, so the
 * trace keeps the current one: the adapter reads its headers and reports its answer, the failover its failure.
 */
export interface UpstreamTrace {
  attemptStarted(attempt: UpstreamAttempt): void;
  /** Headers the current attempt sends (`traceparent`, `tracestate`): the vendor's side joins the client's trace. */
  readonly propagationHeaders: Readonly<Record<string, string>> | undefined;
  /** The vendor answered the current attempt: its HTTP status and its request id header's value. */
  attemptAnswered(status: number, vendorRequestId: string | undefined): void;
  /** The current attempt failed; a successful one ends with the reply instead. */
  attemptFailed(error: unknown): void;
}

export interface ProviderResponse {
  /** The reply as canonical events, streamed or not: the adapter maps either wire form to the same events. */
  events: AsyncIterable<CanonicalEvent>;
  /** Request parameters this vendor cannot honour and which were left out (quality-only ones). */
  droppedParameters: readonly string[];
  /** The vendor's request id, for support. */
  upstreamRequestId: string | undefined;
}

/**
 * A vendor adapter: canonical request in, vendor HTTP call, canonical events out. It knows nothing of clients.
 * `call` resolves once the vendor accepted the request (status 2xx) and throws a GatewayError otherwise;
 * faults after that surface as an `error` event or a thrown GatewayError from the iterator.
 */
export interface ProviderAdapter {
  readonly vendor: VendorName;
  call(call: ProviderCall): Promise<ProviderResponse>;
  /** The vendor's own count of the prompt's input tokens, where the vendor has a counting endpoint or recipe. */
  countTokens?(request: CanonicalRequest, model: CatalogModel, signal: AbortSignal): Promise<number>;
  /** `countTokens` is computed here, without calling the vendor: cheap enough for every request that needs it. */
  readonly countsLocally?: boolean;
}
