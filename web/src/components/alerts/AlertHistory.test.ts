import { describe, expect, it } from 'vitest';
import type { AlertRule } from '../../api/alerts';
import { describeRule } from './AlertHistory';

describe('describeRule', () => {
  it("names a threshold rule's period in words", () => {
    const rule = { kind: 'limit_threshold', thresholdPercent: 80, scope: 'organisation', period: 'day' } as AlertRule;
    expect(describeRule(rule)).toBe('80% of the daily limit of the organisation');
    expect(describeRule({ ...rule, period: 'month' })).toBe('80% of the monthly limit of the organisation');
  });
});
