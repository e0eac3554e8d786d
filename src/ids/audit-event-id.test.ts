import { describe, expect, it } from 'vitest';
import { nextAuditEventId } from './audit-event-id.js';

describe('audit event ids', () => {
  it('sort in the order they were made within one millisecond, and by time across', () => {
    const at = Date.UTC(2026, 10, 29);
    const ids = [...Array.from({ length: 50 }, () => nextAuditEventId(at)), nextAuditEventId(at + 1)];
    for (const id of ids) expect(id).toMatch(/^aud_[0-9a-f]{32}$/);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
