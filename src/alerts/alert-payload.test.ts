import { describe, expect, it } from 'vitest';
import { type AlertEvent, alertMail } from './alert-payload.js';

function thresholdEvent(period: 'day' | 'week' | 'month'): AlertEvent {
  return {
    id: 'alt_1',
    type: 'alert.limit_threshold',
    created_at: 0,
    organisation_id: 'org_1',
    rule: {
      id: 'alr_1',
      kind: 'limit_threshold',
      amount_usd: null,
      threshold_percent: 80,
      scope: 'project',
      scope_id: 'proj_1',
      period,
    },
    period_start: 0,
    spent_usd: '8',
    limit_usd: '10',
  };
}

describe('alert mails', () => {
  it('name the period of a limit in words', () => {
    const words = { day: 'daily', week: 'weekly', month: 'monthly' } as const;
    for (const [period, adjective] of Object.entries(words) as Array<[keyof typeof words, string]>) {
      const mail = alertMail(thresholdEvent(period), 'Acme');
      expect(mail.subject).toBe(`Tollgate: Acme reached 80% of a ${adjective} limit`);
      expect(mail.text).toContain(
        `Acme has spent $8.00 of the $10.00 ${adjective} limit of its project proj_1: 80% or more.`,
      );
    }
  });
});
