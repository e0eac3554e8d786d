import { describe, expect, it } from 'vitest';
import { canonicalRequest } from '../../test/helpers/anthropic-test-fixtures.js';
import { GatewayError } from '../canonical/errors.js';
import { ModelCatalog } from '../catalog/model-catalog.js';
import { assertOutputOptions, outputOptionsSupported } from './output-options.js';

const catalog = new ModelCatalog();
const choices = (count: number) => canonicalRequest({ choices: { count, param: 'generationConfig.candidateCount' } });
const logprobs = canonicalRequest({ logprobs: { topCandidates: 2, param: 'logprobs' } });

function refusal(request: ReturnType<typeof canonicalRequest>, model: string): GatewayError {
  try {
    assertOutputOptions(request, catalog.resolve(model));
  } catch (error) {
    if (error instanceof GatewayError) return error;
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('output options by vendor', () => {
  it('several choices: up to 128 on beta, 8 on Gemini 2.5, one elsewhere; refusals name the client field', () => {
    expect(outputOptionsSupported(choices(128), catalog.resolve('beta-5.4'))).toBe(true);
    expect(outputOptionsSupported(choices(8), catalog.resolve('gamma-2.5-pro'))).toBe(true);
    for (const [count, model] of [
      [9, 'gamma-2.5-pro'],
      [2, 'gamma-3.5-flash'],
      [2, 'alpha-sonnet-5'],
      [2, 'delta-v4-flash'],
    ] as const) {
      const error = refusal(choices(count), model);
      expect(error.code).toBe('unsupported_parameter');
      expect(error.param).toBe('generationConfig.candidateCount');
    }
  });

  it('log probabilities: beta, gamma and delta outside thinking; never alpha or the reasoner', () => {
    for (const model of ['beta-5.4', 'gamma-3.5-flash', 'delta-v4-flash'])
      expect(outputOptionsSupported(logprobs, catalog.resolve(model))).toBe(true);
    for (const model of ['alpha-haiku-4-5', 'delta-r1']) expect(refusal(logprobs, model).param).toBe('logprobs');
    const thinking = canonicalRequest({ ...logprobs, reasoning: { effort: 'high' } });
    expect(refusal(thinking, 'delta-v4-flash').param).toBe('logprobs');
  });
});
