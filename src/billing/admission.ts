import type { AdmissionPlan, AdmissionState } from '../storage/billing-types.js';
import { affordableUnits, formatUsd, type NanoUsd } from './money.js';
import type { ModelPrices } from './prices.js';

export interface AdmissionRequest {
  /** Estimated input tokens (tokenizer), already including the safety margin. */
  inputTokens: number;
  /** The client's own output limit, when it gave one. */
  clientMaxOutputTokens: number | undefined;
  /** The model's output limit: the most output the request may grow to when the client gave none. */
  modelMaxOutputTokens: number;
  /**
   * The first slice of output held at admission (docs/architecture.md#holds-that-grow): the hold grows a slice at a
   * time beyond it.
   */
  firstSliceTokens: number;
  prices: ModelPrices;
  /** The request carries a 1-hour cache breakpoint: any prompt token may be billed as a 1-hour cache write. */
  oneHourCacheWrites?: boolean;
  /**
   * The web searches the request's tools allow and the price of each. They are held only from money left once the
   * prompt and the first slice are: a request the account cannot pay every search for runs with as many as it can
   * (none: it runs without the search tool), instead of being refused for a search it may not make.
   */
  webSearches?: WebSearchBudget;
}

export interface WebSearchBudget {
  /** The most searches the request's tools allow. */
  wanted: number;
  priceNano: NanoUsd;
  /** The tool choice forces a search: the request cannot run without one, so one must be paid for to start. */
  required?: boolean;
}

/**
 * Worst-case price of an input token: a prompt written to a cache costs more than plain input, and a 1-hour write
 * (only possible when the request asks for one) more than a 5-minute one. The hold is never below what settlement
 * can charge for the prompt, whatever the vendor reports cached.
 */
export function inputPrice(request: Pick<AdmissionRequest, 'prices' | 'oneHourCacheWrites'>): NanoUsd {
  const { prices } = request;
  let price = prices.cacheWrite > prices.input ? prices.cacheWrite : prices.input;
  if (request.oneHourCacheWrites === true && prices.cacheWrite1h > price) price = prices.cacheWrite1h;
  return price;
}

/** The output a request may produce in all: the client's limit, or the model's. */
export function outputLimit(request: Pick<AdmissionRequest, 'clientMaxOutputTokens' | 'modelMaxOutputTokens'>): number {
  return request.clientMaxOutputTokens ?? request.modelMaxOutputTokens;
}

/**
 * Decides a request's hold from the wallet's state (read under the wallet row's lock). Free tokens cover the
 * input first, then the output. The hold is every input token at the (worst-case) input price plus a first slice
 * of output at the output price (docs/architecture.md#holds-that-grow): the hold grows a slice at a time as output
 * arrives, so a small balance runs many requests at once. When the balance covers the prompt but not the whole first
 * slice, the request starts with the slice the account can pay for (it ends as a length stop if no more is granted); it
 * is refused only when not one output token is covered.
 */
export function planAdmission(request: AdmissionRequest, state: AdmissionState): AdmissionPlan {
  const freeForInput = Math.min(state.freeTokensLeft, request.inputTokens);
  const freeLeftForOutput = state.freeTokensLeft - freeForInput;
  const inputTokenPrice = inputPrice(request);
  const inputCost = BigInt(request.inputTokens - freeForInput) * inputTokenPrice;
  const outputPrice = request.prices.output;
  const moneyForOutput = state.availableNano - inputCost;
  const paidOutputAffordable =
    moneyForOutput < 0n ? -1 : outputPrice === 0n ? Number.MAX_SAFE_INTEGER : Number(moneyForOutput / outputPrice);
  const affordableOutput =
    paidOutputAffordable < 0 ? 0 : Math.min(Number.MAX_SAFE_INTEGER, freeLeftForOutput + paidOutputAffordable);

  const firstSlice = firstSliceOf(request);
  const output = Math.min(firstSlice, affordableOutput);
  const freeForOutput = Math.min(freeLeftForOutput, output);
  const tokensHold = inputCost + BigInt(output - freeForOutput) * outputPrice;

  if (paidOutputAffordable < 0 || output < 1 || tokensHold > state.availableNano) {
    return { admitted: false, reason: refusal(request, state, inputCost) };
  }
  // Searches only from a whole first slice's leftover: a request cut short of its slice has no money to search with.
  const searches = request.webSearches;
  const webSearches =
    searches === undefined || searches.wanted === 0
      ? undefined
      : output < firstSlice
        ? 0
        : affordableUnits(searches.wanted, searches.priceNano, state.availableNano - tokensHold);
  if (searches?.required === true && webSearches === 0) {
    return { admitted: false, reason: refusal(request, state, inputCost) };
  }
  const searchesHold = BigInt(webSearches ?? 0) * (searches?.priceNano ?? 0n);
  // Whether the whole output limit is paid for too, with the searches' money set aside.
  const outputAfterSearches =
    outputPrice === 0n
      ? Number.MAX_SAFE_INTEGER
      : freeLeftForOutput + Number((moneyForOutput - searchesHold) / outputPrice);
  return {
    admitted: true,
    holdNano: tokensHold + searchesHold,
    freeTokens: freeForInput + freeForOutput,
    maxOutputTokens: output,
    coversLimit: outputLimit(request) <= outputAfterSearches,
    ...(webSearches === undefined ? {} : { webSearches }),
    ...(freeForInput + freeForOutput === 0
      ? {}
      : { freeTokenPrices: { outputTokens: freeForOutput, outputNano: outputPrice, inputNano: inputTokenPrice } }),
  };
}

/** The output held at admission when the account can pay for it: the first slice, or less when the request's limit is lower. */
export function firstSliceOf(request: AdmissionRequest): number {
  return Math.max(1, Math.min(request.firstSliceTokens, outputLimit(request)));
}

/** What the request needed to start: its prompt and its first slice of output, at list price beyond the free tokens left. */
export function startingCost(request: AdmissionRequest, freeTokensLeft: number): NanoUsd {
  const freeForInput = Math.min(freeTokensLeft, request.inputTokens);
  const freeForOutput = Math.min(freeTokensLeft - freeForInput, firstSliceOf(request));
  const requiredSearch = request.webSearches?.required === true ? request.webSearches.priceNano : 0n;
  return (
    requiredSearch +
    BigInt(request.inputTokens - freeForInput) * inputPrice(request) +
    BigInt(firstSliceOf(request) - freeForOutput) * request.prices.output
  );
}

/**
 * The refusal's text (the 403 `insufficient_balance`): what the request needed to start (its prompt and first slice of
 * output), what the account has, and what its requests in flight hold: a balance held by others reads as such,
 * never as money gone. The figures of what is held are added by the caller that knows them (billing-service).
 */
function refusal(request: AdmissionRequest, state: AdmissionState, inputCost: NanoUsd): string {
  const available = state.availableNano > 0n ? state.availableNano : 0n;
  const freeNote =
    state.freeTokensLeft > 0 ? ` and ${state.freeTokensLeft} free tokens left today` : ' and no free tokens left today';
  const needed = inputCost > available ? inputCost : startingCost(request, state.freeTokensLeft);
  const what =
    inputCost > available
      ? `its prompt alone (about ${request.inputTokens} input tokens)`
      : `its prompt (about ${request.inputTokens} input tokens)${request.webSearches?.required === true ? ', the web search it asks for' : ''} and a first slice of ${firstSliceOf(request)} output tokens`;
  return `Insufficient balance: this request needs $${formatUsd(needed)} to start (${what}), but the account has $${formatUsd(available)} available${freeNote}.`;
}
