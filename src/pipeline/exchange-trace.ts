import type { CanonicalResponse } from '../canonical/accumulate.js';
import type { CanonicalRequest } from '../canonical/request.js';
import type { CanonicalUsage } from '../canonical/usage.js';
import type { CatalogModel } from '../catalog/model-catalog.js';
import type { AuthenticatedKey } from '../keys/key-service.js';
import type { UpstreamTrace } from '../providers/types.js';
import type { SettlementOutcome } from '../billing/billing-service.js';
import type { Outcome } from './relayed-events.js';

/**
 * What the pipeline tells a request's trace (implemented in src/telemetry, absent when tracing and OTLP metrics are
 * off: the pipeline then tests one `undefined` and does nothing else). The request's own span is opened by the HTTP
 * layer before the body is read; these calls fill it in and add its children (admission, upstream attempts,
 * settlement). Every method is safe to call in any order; a trace never throws into the request.
 */
export interface ExchangeTrace extends UpstreamTrace {
  /** The request is decoded and its model resolved. */
  exchangeStarted(request: CanonicalRequest, model: CatalogModel, auth: AuthenticatedKey): void;
  /** Runs `admit` (the hold) inside the admission span. */
  admission<T>(admit: () => Promise<T>): Promise<T>;
  /** The model that answers (a fallback's, when the requested one failed) and the vendor's request id. */
  answeredBy(model: CatalogModel, vendorRequestId: string | undefined): void;
  /** Seconds from the request's arrival to its first output (streams). */
  firstOutput(seconds: number): void;
  /** Runs `settle` inside the settlement span; `outcome` is how the reply ended. */
  settlement(outcome: Outcome, settle: () => Promise<SettlementOutcome>): Promise<SettlementOutcome>;
  /** The reply is over and settled: its response, the usage it was billed for, and how it ended. */
  replyFinished(response: CanonicalResponse, usage: CanonicalUsage, outcome: Outcome): void;
  /** The pipeline refused or failed the request before a reply (the error the client gets). */
  exchangeFailed(error: unknown): void;
}
