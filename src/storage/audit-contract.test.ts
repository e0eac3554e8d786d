/**
 * The audit log's storage (migration 0018) against SQLite and the real PostgreSQL: appends read back exactly,
 * newest first, each filter alone and together, keyset pages without gaps or repeats (ties on the time included),
 * one organisation's log never showing another's, billing details and their event in one transaction, and the
 * ledger entries receipts read only within their own account.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createAccountIn,
  postgresBackend,
  sqliteBackend,
  type TestDatabase,
} from '../../test/helpers/storage-backends.js';
import { AuditLog } from '../accounts/audit/audit-log.js';
import type { AuditEventRecord } from './audit-types.js';
import type { Storage } from './types.js';

describe.each([sqliteBackend, postgresBackend])('audit log storage: $name', (backend) => {
  let database: TestDatabase;
  let storage: Storage;

  beforeAll(async () => {
    database = await backend.createDatabase();
    storage = await database.open();
    await storage.migrate();
  });

  afterAll(async () => {
    await storage?.close();
    await database?.drop();
  });

  const account = () => createAccountIn(storage);

  function event(organisationId: string, overrides: Partial<AuditEventRecord> = {}): AuditEventRecord {
    return {
      id: `aud_${randomUUID().replaceAll('-', '')}`,
      organisationId,
      createdAt: 1_000,
      actorType: 'person',
      actorId: 'acct-1',
      actorEmail: 'Person@Example.com',
      actorKeyId: null,
      ip: '203.0.113.9',
      action: 'key.create',
      targetType: 'key',
      targetId: 'key_1',
      beforeJson: null,
      afterJson: '{"name":"ü 🚗"}',
      ...overrides,
    };
  }

  it('reads back what it appended, newest first, and only the organisation’s own', async () => {
    const [mine, theirs] = [await account(), await account()];
    const first = event(mine, { createdAt: 1_000 });
    const second = event(mine, { createdAt: 2_000, action: 'money.credit', actorType: 'operator', actorId: null });
    await storage.audit.append(first);
    await storage.audit.append(second);
    await storage.audit.append(event(theirs));
    expect(await storage.audit.list({ organisationId: mine, limit: 10 })).toEqual([second, first]);
    expect(await storage.audit.list({ organisationId: theirs, limit: 10 })).toHaveLength(1);
    expect(await storage.audit.list({ organisationId: 'nobody', limit: 10 })).toEqual([]);
  });

  it('filters by time, action and actor (id, email in any case, or type)', async () => {
    const org = await account();
    const at = [1_000, 2_000, 3_000];
    const person = event(org, { createdAt: at[0] });
    const operator = event(org, { createdAt: at[1], actorType: 'operator', actorId: null, actorEmail: null });
    const system = event(org, {
      createdAt: at[2],
      actorType: 'system',
      actorId: 'stripe',
      actorEmail: null,
      action: 'money.topup',
    });
    for (const item of [person, operator, system]) await storage.audit.append(item);
    const ids = async (query: Partial<Parameters<Storage['audit']['list']>[0]>) =>
      (await storage.audit.list({ organisationId: org, limit: 10, ...query })).map((item) => item.id);
    expect(await ids({ from: 2_000 })).toEqual([system.id, operator.id]);
    expect(await ids({ to: 2_000 })).toEqual([person.id]);
    expect(await ids({ from: 1_500, to: 2_500 })).toEqual([operator.id]);
    expect(await ids({ actions: ['money.topup'] })).toEqual([system.id]);
    expect(await ids({ actions: [] })).toEqual([]);
    expect(await ids({ actor: 'PERSON@example.COM' })).toEqual([person.id]);
    expect(await ids({ actor: 'acct-1' })).toEqual([person.id]);
    expect(await ids({ actor: 'operator' })).toEqual([operator.id]);
    expect(await ids({ actor: 'stripe' })).toEqual([system.id]);
    expect(await ids({ actor: 'system', actions: ['key.create'] })).toEqual([]);
  });

  it('pages by (time, id) without gaps or repeats, ties on the time included', async () => {
    const org = await account();
    const appended = Array.from({ length: 7 }, (_, index) => event(org, { createdAt: 5_000 + Math.floor(index / 3) }));
    for (const item of appended) await storage.audit.append(item);
    const seen: string[] = [];
    let olderThan: { createdAt: number; id: string } | undefined;
    for (;;) {
      const page = await storage.audit.list({ organisationId: org, limit: 2, ...(olderThan ? { olderThan } : {}) });
      seen.push(...page.map((item) => item.id));
      const last = page[page.length - 1];
      if (page.length < 2 || last === undefined) break;
      olderThan = { createdAt: last.createdAt, id: last.id };
    }
    const expected = [...appended]
      .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))
      .map((item) => item.id);
    expect(seen).toEqual(expected);
  });

  it('sets billing details and records the change in one transaction; an unknown organisation writes nothing', async () => {
    const org = await account();
    const log = new AuditLog(storage.audit, storage.organisations, () => 9_000);
    const context = {
      organisationId: org,
      actor: { type: 'person' as const, accountId: org, email: 'a@x.io' },
      ip: '::1',
    };
    const changed = await log.setBillingDetails({ billingName: 'Acme', billingAddress: 'Road 1\nTown' }, context);
    expect(changed).toEqual({
      before: { billingName: null, billingAddress: null },
      after: { billingName: 'Acme', billingAddress: 'Road 1\nTown' },
    });
    expect(await storage.organisations.findById(org)).toMatchObject({
      billingName: 'Acme',
      billingAddress: 'Road 1\nTown',
    });
    const [recorded] = await storage.audit.list({ organisationId: org, limit: 10 });
    expect(recorded).toMatchObject({
      action: 'organisation.billing_details',
      createdAt: 9_000,
      ip: '::1',
      targetId: org,
      beforeJson: '{"billingName":null,"billingAddress":null}',
      afterJson: '{"billingName":"Acme","billingAddress":"Road 1\\nTown"}',
    });
    expect(
      await log.setBillingDetails(
        { billingName: 'X', billingAddress: null },
        { ...context, organisationId: 'org_none' },
      ),
    ).toBeNull();
    expect(await storage.audit.list({ organisationId: 'org_none', limit: 10 })).toEqual([]);
  });

  it('renames an organisation and records both names in one transaction', async () => {
    const org = await account();
    const log = new AuditLog(storage.audit, storage.organisations, () => 9_500);
    const context = { organisationId: org, actor: { type: 'operator' as const }, ip: null };
    expect(await log.rename('Acme Labs', context)).toEqual({
      before: { name: 'Personal' },
      after: { name: 'Acme Labs' },
    });
    expect((await storage.organisations.findById(org))?.name).toBe('Acme Labs');
    const [recorded] = await storage.audit.list({ organisationId: org, limit: 1 });
    expect(recorded).toMatchObject({
      action: 'organisation.rename',
      beforeJson: '{"name":"Personal"}',
      afterJson: '{"name":"Acme Labs"}',
    });
    expect(await log.rename('X', { ...context, organisationId: 'org_none' })).toBeNull();
  });

  it('has no way to change or remove an event', () => {
    expect(Object.keys(storage.audit).sort()).toEqual(['append', 'list', 'rename', 'setBillingDetails']);
  });

  it('reads a ledger entry for a receipt only within its own account', async () => {
    const [owner, stranger] = [await account(), await account()];
    await storage.billing.credit({
      accountId: owner,
      kind: 'topup',
      amountNano: 12_345_678_901n,
      idempotencyKey: `topup:${randomUUID()}`,
      note: null,
      at: 7_000,
    });
    const [entry] = await storage.billing.ledger(owner, 1);
    expect(await storage.receipts.ledgerEntry(owner, entry!.id)).toEqual({
      id: entry!.id,
      accountId: owner,
      kind: 'topup',
      amountNano: 12_345_678_901n,
      idempotencyKey: entry!.idempotencyKey,
      note: null,
      createdAt: 7_000,
    });
    expect(await storage.receipts.ledgerEntry(stranger, entry!.id)).toBeNull();
  });
});
