import { describe, expect, it } from 'vitest';
import type { CanonicalRequest } from '../canonical/request.js';
import { ModelCatalog } from '../catalog/model-catalog.js';
import { canonicalRequest } from '../../test/helpers/anthropic-test-fixtures.js';
import { clampOutputLimit, clampThinkingBudget } from './request-limits.js';

const catalog = new ModelCatalog();

/** An Anthropic client's request with a thinking budget, clamped as the pipeline does: output first, then budget. */
function served(model: string, maxOutputTokens: number, budgetTokens: number, extra: Partial<CanonicalRequest> = {}) {
  const request = canonicalRequest({
    model,
    maxOutputTokens,
    reasoning: { enabled: true, budgetTokens, display: 'summarized' },
    extensionsProtocol: 'anthropic-messages',
    ...extra,
  });
  const outputClamp = clampOutputLimit(request, catalog.resolve(model));
  const budgetClamp = clampThinkingBudget(request);
  return { request, outputClamp, budgetClamp };
}

describe('clampThinkingBudget', () => {
  it("lowers Qwen Code's budget (32000 with max_tokens 32000) to leave the answer 4096 tokens", () => {
    const { request, outputClamp, budgetClamp } = served('alpha-sonnet-5', 32_000, 32_000);
    expect(outputClamp).toBeUndefined();
    expect(budgetClamp).toBe(27_904);
    expect(request.maxOutputTokens).toBe(32_000);
    expect(request.reasoning).toEqual({ enabled: true, budgetTokens: 27_904, display: 'summarized' });
  });

  it('lowers a budget the output clamp pushed above the limit (delta-v4-flash allows 8192)', () => {
    const { request, outputClamp, budgetClamp } = served('delta-v4-flash', 64_000, 20_000);
    expect(outputClamp).toBe(8192);
    expect(budgetClamp).toBe(4096);
    expect(request.reasoning?.budgetTokens).toBe(4096);
  });

  it("keeps half the limit for a small one, never under Anthropic's 1024; turns thinking off when none fits", () => {
    expect(served('alpha-sonnet-5', 3000, 3000).budgetClamp).toBe(1500);
    expect(served('alpha-sonnet-5', 1800, 5000).budgetClamp).toBe(1024);
    const none = served('alpha-sonnet-5', 1024, 1024);
    expect(none.budgetClamp).toBe(0);
    expect(none.request.reasoning).toEqual({ enabled: false, display: 'summarized' });
  });

  it('leaves a budget below the limit, requests without one, and other protocols alone', () => {
    const fits = served('alpha-sonnet-5', 4000, 2000);
    expect(fits.budgetClamp).toBeUndefined();
    expect(fits.request.reasoning?.budgetTokens).toBe(2000);
    expect(served('alpha-sonnet-5', 4000, 2000, { reasoning: { effort: 'high' } }).budgetClamp).toBeUndefined();
    expect(served('alpha-sonnet-5', 4000, 8000, { maxOutputTokens: undefined }).budgetClamp).toBeUndefined();
    // Gemini clients' budgets have their own meaning (-1: the model's own amount); their adapters handle them.
    const gemini = served('alpha-sonnet-5', 4000, 8000, { extensionsProtocol: 'gemini-generate' });
    expect(gemini.budgetClamp).toBeUndefined();
    expect(gemini.request.reasoning?.budgetTokens).toBe(8000);
  });
});
