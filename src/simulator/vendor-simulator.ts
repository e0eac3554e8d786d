/**
 * The contract of one vendor's wire protocol inside the simulator. Adding a vendor is one module that
 * implements this and one entry in `vendor-registry.ts`; routing, lifecycle, pacing and faults are shared.
 */
import type { VendorName } from '../canonical/request.js';
import type { SimulatorExchange } from './simulator-exchange.js';

export interface VendorSimulator {
  readonly vendor: VendorName;
  /**
   * Path that the vendor's official SDK takes as its base URL, starting with `/<vendor>` (the routing
   * prefix): `/openai/v1` for OpenAI (the SDK's base URLs end in /v1), `/anthropic` for Anthropic (its SDK
   * appends /v1/messages itself).
   */
  readonly basePath: string;
  /** Answers one request whose path starts with `/<vendor>`; `exchange.path` is what follows it. */
  handle(exchange: SimulatorExchange): Promise<void>;
}
