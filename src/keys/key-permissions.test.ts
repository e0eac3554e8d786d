import { describe, expect, it } from 'vitest';
import {
  assertKeyMayUseModel,
  currentPeriodSpend,
  exceedsPermissions,
  keyMayUseModel,
  modelAllowed,
} from './key-permissions.js';
import {
  FULL_PERMISSIONS,
  spendPeriodFirstDay,
  spendPeriodNumber,
  spendPeriodResetsAt,
  type KeyPermissions,
} from '../storage/key-permission-types.js';

const at = (iso: string) => Date.parse(iso);
const families: Record<string, string> = { 'gamma-2.5-pro': 'gamma', 'gamma-3.5-flash': 'gamma', 'beta-5.4': 'beta' };
const familyOf = (id: string) => families[id];
const keyWith = (change: Partial<KeyPermissions>): KeyPermissions => ({ ...FULL_PERMISSIONS, ...change });

describe('spend periods (UTC)', () => {
  it('numbers days and months so that a later period is always a larger number, across a year end', () => {
    expect(spendPeriodNumber('day', at('2026-12-31T23:59:59.999Z')) + 1).toBe(
      spendPeriodNumber('day', at('2027-01-01T00:00:00.000Z')),
    );
    expect(spendPeriodNumber('month', at('2026-12-31T23:59:59.999Z')) + 1).toBe(
      spendPeriodNumber('month', at('2027-01-01T00:00:00.000Z')),
    );
    expect(spendPeriodNumber('total', at('2027-01-01T00:00:00.000Z'))).toBe(0);
  });

  it('resets at the next UTC midnight, the first of the next month, or never', () => {
    expect(new Date(spendPeriodResetsAt('day', at('2026-02-28T13:00:00Z'))!).toISOString()).toBe(
      '2026-03-01T00:00:00.000Z',
    );
    expect(new Date(spendPeriodResetsAt('month', at('2026-12-15T13:00:00Z'))!).toISOString()).toBe(
      '2027-01-01T00:00:00.000Z',
    );
    expect(spendPeriodResetsAt('total', at('2026-12-15T13:00:00Z'))).toBeNull();
    expect(new Date(spendPeriodFirstDay('month', at('2026-03-31T23:00:00Z'))! * 86_400_000).toISOString()).toBe(
      '2026-03-01T00:00:00.000Z',
    );
  });

  it('counts an older period counter as nothing spent', () => {
    const limit = { limitNano: 100n, period: 'day' as const };
    const today = spendPeriodNumber('day', at('2026-05-02T10:00:00Z'));
    expect(
      currentPeriodSpend(limit, { periodStart: today, usedNano: 40n, reservedNano: 0n }, at('2026-05-02T23:00:00Z')),
    ).toBe(40n);
    expect(
      currentPeriodSpend(limit, { periodStart: today, usedNano: 40n, reservedNano: 0n }, at('2026-05-03T00:00:00Z')),
    ).toBe(0n);
  });
});

describe('model allowlists', () => {
  it('allows listed ids and whole listed families only', () => {
    const key = keyWith({ models: ['gamma', 'beta-5.4'] });
    expect(modelAllowed(key, { id: 'gamma-3.5-flash', family: 'gamma' })).toBe(true);
    expect(modelAllowed(key, { id: 'beta-5.4', family: 'beta' })).toBe(true);
    expect(modelAllowed(key, { id: 'beta-5.5', family: 'beta' })).toBe(false);
    expect(modelAllowed(FULL_PERMISSIONS, { id: 'anything', family: 'delta' })).toBe(true);
  });
});

describe('no escalation', () => {
  it('a full key may give anything', () => {
    expect(
      exceedsPermissions(keyWith({ spendLimit: { limitNano: 5n, period: 'total' } }), FULL_PERMISSIONS, familyOf),
    ).toBeNull();
  });

  it('names the first field that would exceed the parent', () => {
    const parent = keyWith({
      scopes: ['models:use', 'keys:manage'],
      models: ['gamma'],
      spendLimit: { limitNano: 100n, period: 'day' },
      rateLimit: { requestsPerMinute: 10, tokensPerMinute: null },
    });
    const within = keyWith({
      scopes: ['models:use'],
      models: ['gamma-2.5-pro'],
      spendLimit: { limitNano: 100n, period: 'day' },
      rateLimit: { requestsPerMinute: 5, tokensPerMinute: 99 },
    });
    expect(exceedsPermissions(within, parent, familyOf)).toBeNull();
    expect(exceedsPermissions({ ...within, scopes: null }, parent, familyOf)).toBe('scopes');
    expect(exceedsPermissions({ ...within, models: ['beta-5.4'] }, parent, familyOf)).toBe('models');
    expect(exceedsPermissions({ ...within, models: null }, parent, familyOf)).toBe('models');
    expect(exceedsPermissions({ ...within, spendLimit: { limitNano: 101n, period: 'day' } }, parent, familyOf)).toBe(
      'spend_limit',
    );
    expect(exceedsPermissions({ ...within, spendLimit: { limitNano: 1n, period: 'month' } }, parent, familyOf)).toBe(
      'spend_limit',
    );
    expect(exceedsPermissions({ ...within, rateLimit: null }, parent, familyOf)).toBe('rate_limit');
    expect(
      exceedsPermissions({ ...within, rateLimit: { requestsPerMinute: 11, tokensPerMinute: null } }, parent, familyOf),
    ).toBe('rate_limit');
  });

  it('a key limited to some models of a family cannot give the whole family', () => {
    const parent = keyWith({ models: ['gamma-2.5-pro'] });
    expect(exceedsPermissions(keyWith({ models: ['gamma'] }), parent, familyOf)).toBe('models');
    expect(exceedsPermissions(keyWith({ models: ['gamma-2.5-pro'] }), parent, familyOf)).toBeNull();
  });
});

describe("a key's models with its project's", () => {
  const model = (id: string) => ({ id, family: familyOf(id)! });
  const auth = (key: readonly string[] | null, project: readonly string[] | null) => ({
    key: { permissions: { models: key } },
    project: { models: project },
  });

  it('allows a model only when both lists do (a null list allows every model)', () => {
    expect(keyMayUseModel(auth(null, null), model('beta-5.4'))).toBe(true);
    expect(keyMayUseModel(auth(null, ['gamma']), model('beta-5.4'))).toBe(false);
    expect(keyMayUseModel(auth(['beta'], ['gamma']), model('beta-5.4'))).toBe(false);
    expect(keyMayUseModel(auth(['gamma-3.5-flash', 'beta'], ['gamma']), model('gamma-3.5-flash'))).toBe(true);
    expect(keyMayUseModel(auth(['gamma-3.5-flash'], ['gamma']), model('gamma-2.5-pro'))).toBe(false);
    expect(keyMayUseModel(auth(null, ['gamma-2.5-pro']), model('gamma-2.5-pro'))).toBe(true);
  });

  it("names the list that refuses: the key's own first, then the project's", () => {
    expect(() => assertKeyMayUseModel(auth(['gamma'], ['beta']), model('beta-5.4'))).toThrow(
      /^This API key may not use the model 'beta-5.4'/,
    );
    expect(() => assertKeyMayUseModel(auth(null, ['gamma']), model('beta-5.4'))).toThrow(
      "The project of this API key may not use the model 'beta-5.4'. It may use: gamma.",
    );
    expect(() => assertKeyMayUseModel(auth(null, ['gamma']), model('gamma-2.5-pro'))).not.toThrow();
  });
});
