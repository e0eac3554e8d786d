import { describe, expect, it } from 'vitest';
import { ModelCatalog } from '../../catalog/model-catalog.js';
import { capabilitiesOf, pricingOf } from './model-facts.js';

describe('model facts', () => {
  const catalog = new ModelCatalog();

  it('lists the family defaults for a model without an operator capability list', () => {
    const model = catalog.resolve('alpha-sonnet-5');
    expect(capabilitiesOf(model)).toEqual({ tools: true, images: true, reasoning: true, structured_output: true });
    const deepseek = catalog.resolve('delta-v4-flash');
    expect(capabilitiesOf(deepseek)).toMatchObject({ images: false, structured_output: false });
  });

  it("lists only what an operator's capability list lets the model be asked for", () => {
    const model = { ...catalog.resolve('alpha-sonnet-5'), capabilities: ['webSearch'] as const };
    expect(capabilitiesOf(model)).toMatchObject({ tools: false, images: false });
  });

  it('gives prices per million tokens as exact decimal strings', () => {
    expect(pricingOf(catalog.resolve('delta-v4-flash'))).toMatchObject({
      input: '0.14',
      output: '0.28',
      cache_read: '0.014',
    });
  });
});
