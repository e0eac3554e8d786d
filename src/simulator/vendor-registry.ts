/**
 * The vendor protocols the simulator serves, one module each. Replacing a `reservedVendor` stand-in with
 * a real module is all it takes to add a vendor; the record type makes a missing vendor a compile error.
 */
import type { VendorName } from '../canonical/request.js';
import { openAiSimulator } from './openai/openai-handler.js';
import { reservedVendor } from './reserved-vendors.js';
import type { VendorSimulator } from './vendor-simulator.js';

export const VENDOR_SIMULATORS: Readonly<Record<VendorName, VendorSimulator>> = {
  openai: openAiSimulator,
  anthropic: reservedVendor('anthropic', '/anthropic'),
  gemini: reservedVendor('gemini', '/gemini'),
  deepseek: reservedVendor('deepseek', '/deepseek'),
};
