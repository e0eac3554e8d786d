import { GatewayError } from '../canonical/errors.js';
import { choiceCount, type CanonicalRequest, type VendorName } from '../canonical/request.js';
import type { CatalogModel } from '../catalog/model-catalog.js';
import { resolveDeepSeekThinking } from './deepseek/deepseek-thinking.js';
import { geminiModelTraits } from './gemini/gemini-thinking.js';

/**
 * What each vendor can return besides one reply: several choices (OpenAI's `n` up to 128, Gemini's `candidateCount`
 * up to 8 on Gemini 2.5; Gemini 3 answers "Multiple candidates is not enabled") and log probabilities of the output
 * tokens (OpenAI, Gemini, and DeepSeek outside thinking mode). Asking a vendor for what it cannot give would change
 * the reply's contract, so such a request is refused, not trimmed.
 */
const VENDOR_OUTPUT_OPTIONS: Readonly<Record<VendorName, { maxChoices: number; logprobs: boolean }>> = {
  anthropic: { maxChoices: 1, logprobs: false },
  openai: { maxChoices: 128, logprobs: true },
  gemini: { maxChoices: 8, logprobs: true },
  deepseek: { maxChoices: 1, logprobs: true },
};

/** Alternatives per token every vendor with log probabilities gives at most. */
export const MAX_TOP_LOGPROBS = 20;

/** Why the model's vendor cannot serve the request's choices or log probabilities, or undefined when it can. */
function outputOptionsRefusal(request: CanonicalRequest, model: CatalogModel): GatewayError | undefined {
  const options = VENDOR_OUTPUT_OPTIONS[model.vendor];
  const choices = request.choices;
  const maxChoices =
    model.vendor === 'gemini' && geminiModelTraits(model.upstreamModel).generation >= 3 ? 1 : options.maxChoices;
  if (choices !== undefined && choiceCount(request) > maxChoices) {
    const most = maxChoices === 1 ? 'only one choice' : `at most ${maxChoices} choices`;
    return new GatewayError(
      'unsupported_parameter',
      `'${choices.param}' of ${choices.count} is more than ${model.id} can return (${most}): send fewer, or one request per choice.`,
      { param: choices.param },
    );
  }
  const logprobs = request.logprobs;
  if (logprobs === undefined) return undefined;
  if (!options.logprobs)
    return new GatewayError(
      'unsupported_parameter',
      `'${logprobs.param}' is not available on ${model.id}: its vendor does not return log probabilities.`,
      { param: logprobs.param },
    );
  if (model.vendor === 'deepseek' && resolveDeepSeekThinking(request, model.upstreamModel).enabled)
    return new GatewayError(
      'unsupported_parameter',
      `'${logprobs.param}' is not available on ${model.id} while it thinks: ask without reasoning, or without log probabilities.`,
      { param: logprobs.param },
    );
  return undefined;
}

/** Throws the 400 of a request whose choices or log probabilities the model's vendor cannot give. */
export function assertOutputOptions(request: CanonicalRequest, model: CatalogModel): void {
  const refusal = outputOptionsRefusal(request, model);
  if (refusal !== undefined) throw refusal;
}

/** Whether the model's vendor can give the request's choices and log probabilities (a fallback must, to be taken). */
export function outputOptionsSupported(request: CanonicalRequest, model: CatalogModel): boolean {
  return outputOptionsRefusal(request, model) === undefined;
}
