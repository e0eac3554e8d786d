/**
 * Stand-ins for the vendors whose protocol the simulator does not speak yet: every path answers 404 in that
 * vendor's own error shape, so a client pointed at them fails the way it would against a wrong URL. Each
 * is replaced by a real module in `vendor-registry.ts` when that vendor is added.
 */
import type { VendorName } from '../canonical/request.js';
import { sendJson, type SimulatorExchange } from './simulator-exchange.js';
import type { VendorSimulator } from './vendor-simulator.js';

type NotFoundBody = (message: string) => unknown;

const NOT_FOUND_BODIES: Record<Exclude<VendorName, 'openai'>, NotFoundBody> = {
  anthropic: (message) => ({ type: 'error', error: { type: 'not_found_error', message } }),
  gemini: (message) => ({ error: { code: 404, message, status: 'NOT_FOUND' } }),
  deepseek: (message) => ({ error: { message, type: 'invalid_request_error', param: null, code: null } }),
};

export function reservedVendor(vendor: Exclude<VendorName, 'openai'>, basePath: string): VendorSimulator {
  return {
    vendor,
    basePath,
    handle(exchange: SimulatorExchange): Promise<void> {
      const message = `The simulator does not speak the ${vendor} protocol yet (${exchange.request.method ?? 'GET'} ${exchange.path}).`;
      sendJson(exchange, 404, JSON.stringify(NOT_FOUND_BODIES[vendor](message)));
      return Promise.resolve();
    },
  };
}
