/**
 * The vendor protocols the simulator serves, one module each. The record type makes a missing vendor a
 * compile error.
 */
import type { VendorName } from '../canonical/request.js';
import { anthropicSimulator } from './anthropic/anthropic-handler.js';
import { deepSeekSimulator } from './deepseek/deepseek-handler.js';
import { geminiSimulator } from './gemini/gemini-handler.js';
import { openAiSimulator } from './openai/openai-handler.js';
import type { VendorSimulator } from './vendor-simulator.js';

export const VENDOR_SIMULATORS: Readonly<Record<VendorName, VendorSimulator>> = {
  openai: openAiSimulator,
  anthropic: anthropicSimulator,
  gemini: geminiSimulator,
  deepseek: deepSeekSimulator,
};
