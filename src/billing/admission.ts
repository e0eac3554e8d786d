import type { AdmissionPlan, AdmissionState } from '../storage/billing-types.js';
import { formatUsd, type NanoUsd } from './money.js';
import type { ModelPrices } from './prices.js';

export interface AdmissionRequest {
  /** Estimated input tokens (tokenizer), already including the safety margin. */
  inputTokens: number;
  /** The client's own output limit, when it gave one. */
  clientMaxOutputTokens: number | undefined;
  /** The model's output limit: the worst case when the client gave none. */
  modelMaxOutputTokens: number;
  prices: ModelPrices;
}

/** Worst-case price of an input token: a prompt written to a cache costs more than plain input. */
function inputPrice(prices: ModelPrices): NanoUsd {
  return prices.cacheWrite > prices.input ? prices.cacheWrite : prices.input;
}

/**
 * Decides a request's hold from the account's state (read under the account's lock). Free tokens cover the
 * input first, then the output. The hold is the worst case of what is left: every remaining input token at
 * the input price and every possible output token at the output price.
 *
 * With no client limit, the output is capped at what the account can afford (and at the model's limit)
 * rather than refused; with the client's own limit, a request the balance cannot cover is refused with the
 * number of output tokens it could afford.
 */
export function planAdmission(request: AdmissionRequest, state: AdmissionState): AdmissionPlan {
  const freeForInput = Math.min(state.freeTokensLeft, request.inputTokens);
  const freeLeftForOutput = state.freeTokensLeft - freeForInput;
  const inputCost = BigInt(request.inputTokens - freeForInput) * inputPrice(request.prices);
  const outputPrice = request.prices.output;
  const moneyForOutput = state.availableNano - inputCost;
  const paidOutputAffordable = moneyForOutput < 0n ? -1 : outputPrice === 0n ? Number.MAX_SAFE_INTEGER : Number(moneyForOutput / outputPrice);
  const affordableOutput = paidOutputAffordable < 0 ? 0 : Math.min(Number.MAX_SAFE_INTEGER, freeLeftForOutput + paidOutputAffordable);

  const wanted = request.clientMaxOutputTokens ?? request.modelMaxOutputTokens;
  const output = request.clientMaxOutputTokens === undefined ? Math.min(wanted, affordableOutput) : wanted;
  const freeForOutput = Math.min(freeLeftForOutput, output);
  const holdNano = inputCost + BigInt(output - freeForOutput) * outputPrice;

  if (paidOutputAffordable < 0 || output < 1 || holdNano > state.availableNano) {
    return { admitted: false, reason: refusal(request, state, inputCost, affordableOutput, holdNano, output) };
  }
  return { admitted: true, holdNano, freeTokens: freeForInput + freeForOutput, maxOutputTokens: output };
}

function refusal(request: AdmissionRequest, state: AdmissionState, inputCost: NanoUsd, affordableOutput: number, hold: NanoUsd, output: number): string {
  const available = state.availableNano > 0n ? state.availableNano : 0n;
  const freeNote = state.freeTokensLeft > 0 ? ` and ${state.freeTokensLeft} free tokens left today` : ' and no free tokens left today';
  if (inputCost > available) {
    return `Insufficient balance: the prompt alone (about ${request.inputTokens} input tokens) needs $${formatUsd(inputCost)} beyond the free allowance, but the account has $${formatUsd(available)} available${freeNote}, which covers at most 0 output tokens. Top up the balance in the dashboard.`;
  }
  const needed = output < 1 ? inputCost + request.prices.output : hold;
  return `Insufficient balance: this request may cost up to $${formatUsd(needed)} (about ${request.inputTokens} input tokens and up to ${Math.max(output, 1)} output tokens), but the account has $${formatUsd(available)} available${freeNote}, which covers at most ${affordableOutput} output tokens. Lower max_tokens to ${affordableOutput} or less, or top up the balance in the dashboard.`;
}
