import { describe, expect, it } from 'vitest';
import type { ApiKey } from '../../api/types';
import { draftOf, toLimitsInput } from './KeyLimitsFields';

/** A key with a daily limit shown in the form, and (say) a weekly one set on the Limits page. */
const key = {
  scopes: ['models:use', 'usage:read', 'keys:manage', 'account:redeem'],
  models: null,
  spendLimit: { usd: '5', period: 'day', spentUsd: '0', heldUsd: '0', resetsAt: 0, limitReached: false },
  rateLimit: null,
} as unknown as ApiKey;

describe('the key form’s fields', () => {
  it('leaves an untouched spend limit out of an edit, so the key’s other limits stay', () => {
    const initial = draftOf(key);
    const input = toLimitsInput({ ...initial, rpm: '10' }, initial);
    expect(input).not.toHaveProperty('spendLimit');
    expect(input.rateLimit).toEqual({ requestsPerMinute: 10, tokensPerMinute: null });
  });

  it('sends a changed or cleared spend limit, and every field of a new key', () => {
    const initial = draftOf(key);
    expect(toLimitsInput({ ...initial, period: 'week' }, initial).spendLimit).toEqual({ usd: '5', period: 'week' });
    expect(toLimitsInput({ ...initial, spendUsd: '' }, initial).spendLimit).toBeNull();
    expect(toLimitsInput(initial).spendLimit).toEqual({ usd: '5', period: 'day' });
  });
});
