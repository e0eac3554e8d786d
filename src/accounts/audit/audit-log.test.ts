import { describe, expect, it } from 'vitest';
import { FULL_PERMISSIONS } from '../../storage/key-permission-types.js';
import type { ApiKeyRecord } from '../../storage/types.js';
import { actionsMatching } from './audit-actions.js';
import { auditJson, keySnapshot } from './audit-snapshots.js';

const key: ApiKeyRecord = {
  id: 'key_1',
  accountId: 'acct_1',
  createdBy: 'acct_1',
  projectId: 'proj_default_acct_1',
  name: 'ci',
  keyHash: 'a'.repeat(64),
  hint: 'sk-tg-…abcd',
  createdAt: 1,
  expiresAt: null,
  revokedAt: null,
  lastUsedAt: null,
  permissions: {
    ...FULL_PERMISSIONS,
    spendLimit: { limitNano: 5_000_000_000n, period: 'day' },
    rateLimit: { requestsPerMinute: 10, tokensPerMinute: null },
  },
  spend: { periodStart: 0, usedNano: 0n, reservedNano: 0n },
  limits: [{ limitNano: 5_000_000_000n, period: 'day', periodStart: 0, usedNano: 0n, reservedNano: 0n }],
};

describe('audit values', () => {
  it('shows what a person set on a key, never its hash', () => {
    const text = auditJson(keySnapshot(key))!;
    expect(JSON.parse(text)).toEqual({
      name: 'ci',
      hint: 'sk-tg-…abcd',
      projectId: 'proj_default_acct_1',
      expiresAt: null,
      revokedAt: null,
      scopes: null,
      models: null,
      spendLimit: { nanoUsd: '5000000000', period: 'day' },
      rateLimit: { requestsPerMinute: 10, tokensPerMinute: null },
    });
    expect(text).not.toContain(key.keyHash);
  });

  it('drops secret-looking fields at any depth and writes amounts exactly', () => {
    expect(
      JSON.parse(
        auditJson({
          amountNanoUsd: 12_345_678_901_234_567n,
          secret: 'sk-tg-x',
          nested: { keyHash: 'h', key: 'sk', code: 'TG-1', password: 'p', tokensPerMinute: 5 },
        })!,
      ),
    ).toEqual({ amountNanoUsd: '12345678901234567', nested: { tokensPerMinute: 5 } });
    expect(auditJson(undefined)).toBeNull();
    expect(auditJson(null)).toBeNull();
  });

  it('expands an area to its actions and refuses names it does not know', () => {
    expect(actionsMatching('key.create')).toEqual(['key.create']);
    expect(actionsMatching('money')).toEqual(['money.topup', 'money.redeem', 'money.credit']);
    expect(actionsMatching('ke')).toBeNull();
    expect(actionsMatching('key.explode')).toBeNull();
  });
});
