import type { CalibrationSample, UsageRepository } from '../storage/types.js';

/**
 * Calibration of the admission estimate (docs/billing.md#calibrated-prompt-estimates). The gateway counts a prompt with
 * OpenAI's tokenizer; Anthropic's and Google's count the same text as 10-30% more tokens, so a hold sized on the local
 * count would fall short of what those vendors bill. Per model, the ratio of the vendor's reported prompt tokens to the
 * local count is learned from settled requests and multiplies the local count at admission.
 *
 * The method: until `WARM_UP_SAMPLES` samples are in, the family's default ratio; then their mean, followed by an
 * exponentially weighted moving average (weight `EWMA_WEIGHT` per sample, a memory of about 1 / weight = 20 requests).
 * Every observed ratio and the ratio itself are clamped to [`MIN_RATIO`, `MAX_RATIO`]: below 1 would hold less than the
 * tokenizer counts (no vendor counts fewer by more than noise), above 2 is a prompt the tokenizer cannot see (images,
 * documents) rather than a tokenizer difference, and one such request must not double every later hold. Prompts under
 * `MIN_SAMPLE_TOKENS` are not sampled: their count is dominated by per-message overheads, not by the tokenizer.
 */

export const MIN_RATIO = 1.0;
export const MAX_RATIO = 2.0;
export const WARM_UP_SAMPLES = 20;
export const EWMA_WEIGHT = 0.05;
export const MIN_SAMPLE_TOKENS = 64;
/**
 * How many of the latest usage records a starting gateway reads for samples: one indexed read of at most this many
 * rows (a few milliseconds), enough for the warm-up and the average of every model in ordinary traffic.
 */
export const SEED_SCAN_RECORDS = 5_000;

/**
 * Where each family starts, before its own requests have taught it anything: alpha (Anthropic's tokenizer) counts
 * about 20% more than o200k_base on English prose and code, gamma (Gemini's SentencePiece) about 15% more, the middle
 * of the 10-30% usually seen; beta (OpenAI) is the local tokenizer itself, and delta (DeepSeek's BPE) counts within a
 * few percent of it, so 1.0 there (the hold's margin covers a few percent). An unknown family starts at 1.0.
 */
export const DEFAULT_FAMILY_RATIOS: Readonly<Record<string, number>> = {
  alpha: 1.2,
  gamma: 1.15,
  beta: 1.0,
  delta: 1.0,
};

/** One model's learned state. */
export interface CalibrationState {
  ratio: number;
  samples: number;
  /** Sum of the clamped ratios seen during warm-up (their mean seeds the average). */
  warmUpSum: number;
}

export function clampRatio(ratio: number): number {
  if (!Number.isFinite(ratio)) return MIN_RATIO;
  return Math.min(MAX_RATIO, Math.max(MIN_RATIO, ratio));
}

export function defaultRatio(family: string): number {
  return clampRatio(DEFAULT_FAMILY_RATIOS[family] ?? 1.0);
}

export function initialState(family: string): CalibrationState {
  return { ratio: defaultRatio(family), samples: 0, warmUpSum: 0 };
}

/**
 * The state after one settled request: `localTokens` the tokenizer's count of its prompt, `vendorTokens` the prompt
 * tokens its vendor reported (input, cache reads and cache writes together). A sample too small to tell, or not a
 * count at all, leaves the state as it is.
 */
export function observe(state: CalibrationState, localTokens: number, vendorTokens: number): CalibrationState {
  if (!Number.isSafeInteger(localTokens) || !Number.isSafeInteger(vendorTokens)) return state;
  if (localTokens < MIN_SAMPLE_TOKENS || vendorTokens <= 0) return state;
  const observed = clampRatio(vendorTokens / localTokens);
  const samples = state.samples + 1;
  if (samples < WARM_UP_SAMPLES) return { ...state, samples, warmUpSum: state.warmUpSum + observed };
  if (samples === WARM_UP_SAMPLES)
    return { ratio: clampRatio((state.warmUpSum + observed) / WARM_UP_SAMPLES), samples, warmUpSum: 0 };
  return { ratio: clampRatio(state.ratio + EWMA_WEIGHT * (observed - state.ratio)), samples, warmUpSum: 0 };
}

/** The prompt estimate a hold is sized on: the local count times the model's ratio, in whole tokens. */
export function calibratedTokens(localTokens: number, ratio: number): number {
  return Math.ceil(localTokens * clampRatio(ratio));
}

/**
 * The ratios of one gateway instance, learned in memory from its own settlements after a seed at start-up from the
 * latest samples kept on usage records (`seedCalibration`). Bounded by the models: one entry per model that settled a
 * sampled request.
 */
export class InputCalibration {
  private readonly models = new Map<string, CalibrationState>();

  ratio(modelId: string, family: string): number {
    return this.models.get(modelId)?.ratio ?? defaultRatio(family);
  }

  observe(modelId: string, family: string, localTokens: number, vendorTokens: number): void {
    const before = this.models.get(modelId) ?? initialState(family);
    const after = observe(before, localTokens, vendorTokens);
    if (after !== before) this.models.set(modelId, after);
  }

  /** Replays samples in the order they were settled (oldest first), as if this instance had settled them. */
  seed(samples: Iterable<CalibrationSample>): void {
    for (const sample of samples)
      this.observe(sample.model, sample.family, sample.localInputTokens, sample.vendorInputTokens);
  }

  /** Every model's state, for the metrics and tests. */
  snapshot(): ReadonlyMap<string, Readonly<CalibrationState>> {
    return this.models;
  }
}

/**
 * Seeds the calibration from the samples among the latest usage records, so a restarted or new instance holds as the
 * others do rather than from the defaults. A store that cannot answer leaves the defaults: calibration only sizes
 * holds, and each settlement teaches it again.
 */
export async function seedCalibration(
  usage: Pick<UsageRepository, 'calibrationSamples'>,
  calibration: InputCalibration,
): Promise<number> {
  const samples = await usage.calibrationSamples(SEED_SCAN_RECORDS).catch(() => []);
  calibration.seed(samples);
  return samples.length;
}
