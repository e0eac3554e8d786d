import { describe, expect, it } from 'vitest';
import { actionsMatching, AUDIT_ACTIONS } from '../../../src/accounts/audit/audit-actions';
import { AUDIT_ACTION_CHOICES } from './audit-action-choices';

describe('the audit page’s action choices', () => {
  it('name every action the gateway records, and only filters the gateway understands', () => {
    const values = AUDIT_ACTION_CHOICES.map((choice) => choice.value);
    expect(AUDIT_ACTIONS.filter((action) => !values.includes(action))).toEqual([]);
    expect(values.filter((value) => actionsMatching(value) === null)).toEqual([]);
    expect(new Set(values).size).toBe(values.length);
  });
});
