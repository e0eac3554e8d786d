import { describe, expect, it } from 'vitest';
import { GatewayError } from '../canonical/errors.js';
import { outputSliceOf } from '../billing/priced-model.js';
import { ModelCatalog } from './model-catalog.js';

describe('ModelCatalog', () => {
  const catalog = new ModelCatalog();

  it('maps every public id to its vendor and upstream model', () => {
    expect(
      Object.fromEntries(catalog.models.map((model) => [model.id, `${model.vendor}:${model.upstreamModel}`])),
    ).toEqual({
      'alpha-opus-4-8': 'anthropic:claude-opus-4-8',
      'alpha-sonnet-5': 'anthropic:claude-sonnet-5',
      'alpha-haiku-4-5': 'anthropic:claude-haiku-4-5',
      'beta-5.5': 'openai:gpt-5.5',
      'beta-5.4': 'openai:gpt-5.4',
      o3: 'openai:o3',
      'o4-mini': 'openai:o4-mini',
      'gamma-2.5-pro': 'gemini:gemini-2.5-pro',
      'gamma-3.5-flash': 'gemini:gemini-3.5-flash',
      'delta-v4-flash': 'deepseek:deepseek-v4-flash',
      'delta-r1': 'deepseek:deepseek-reasoner',
    });
  });

  it('applies configured overrides and refuses overrides of unknown ids', () => {
    expect(
      new ModelCatalog({ 'beta-5.4': { upstreamModel: 'gpt-5.4-pinned' } }).resolve('beta-5.4').upstreamModel,
    ).toBe('gpt-5.4-pinned');
    expect(() => new ModelCatalog({ 'beta-9': { upstreamModel: 'x' } })).toThrow(/beta-9/);
  });

  it('sizes output slices at 2,048 tokens, the model limit when lower, or the configured size', () => {
    expect(outputSliceOf(catalog.resolve('beta-5.4'))).toBe(2_048);
    expect(outputSliceOf({ maxOutputTokens: 1_000 })).toBe(1_000);
    expect(
      outputSliceOf(new ModelCatalog({ 'alpha-opus-4-8': { outputSliceTokens: 8_000 } }).resolve('alpha-opus-4-8')),
    ).toBe(8_000);
    expect(
      outputSliceOf(new ModelCatalog({ 'delta-v4-flash': { outputSliceTokens: 50_000 } }).resolve('delta-v4-flash')),
    ).toBe(8_192);
  });

  it('rejects unknown and missing models with a 400 listing the valid ids', () => {
    for (const value of ['gpt-4o', '', undefined, 42]) {
      let error: unknown;
      try {
        catalog.resolve(value);
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(GatewayError);
      expect((error as GatewayError).status).toBe(400);
      expect((error as GatewayError).param).toBe('model');
      expect((error as GatewayError).message).toContain('alpha-opus-4-8, alpha-sonnet-5');
    }
  });
});
