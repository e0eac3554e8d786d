/**
 * Stored Responses (migration 0005) against SQLite and the real PostgreSQL: per-account reads and deletes, the
 * retention bound on reads, batch deletion by age, and the store class the Responses route uses over it.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createAccountIn,
  postgresBackend,
  sqliteBackend,
  type TestDatabase,
} from '../../test/helpers/storage-backends.js';
import { StoredResponses } from '../protocols/openai-responses/stored-responses.js';
import { purgeExpiredUsage } from '../billing/usage-retention.js';
import type { Storage } from './types.js';

const DAY = 86_400_000;

describe.each([sqliteBackend, postgresBackend])('stored responses: $name', (backend) => {
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

  const hex = () => randomUUID().replaceAll('-', '');

  it('reads and deletes only within the owning account', async () => {
    const owner = await account();
    const other = await account();
    const id = `resp_${hex()}`;
    await storage.responses.put({ id, accountId: owner, createdAt: 1_000, response: '{"id":"x"}', inputItems: '[]' });
    expect(await storage.responses.get(owner, id, 0)).toEqual({
      id,
      accountId: owner,
      createdAt: 1_000,
      response: '{"id":"x"}',
      inputItems: '[]',
    });
    expect(await storage.responses.get(other, id, 0)).toBeNull();
    expect(await storage.responses.delete(other, id)).toBe(false);
    expect(await storage.responses.get(owner, id, 1_001)).toBeNull();
    expect(await storage.responses.delete(owner, id)).toBe(true);
    expect(await storage.responses.get(owner, id, 0)).toBeNull();
    expect(await storage.responses.delete(owner, id)).toBe(false);
  });

  it('keeps large bodies intact', async () => {
    const owner = await account();
    const id = `resp_${hex()}`;
    const body = JSON.stringify({ text: 'ü🚗'.repeat(200_000) });
    await storage.responses.put({ id, accountId: owner, createdAt: 5, response: body, inputItems: body });
    expect((await storage.responses.get(owner, id, 0))!.inputItems).toBe(body);
  });

  it('the retention pass deletes old responses in batches and leaves newer ones', async () => {
    const owner = await account();
    const now = 400 * DAY;
    const old = Array.from({ length: 5 }, () => `resp_${hex()}`);
    const fresh = `resp_${hex()}`;
    for (const id of old)
      await storage.responses.put({
        id,
        accountId: owner,
        createdAt: now - 40 * DAY,
        response: '{}',
        inputItems: '[]',
      });
    await storage.responses.put({
      id: fresh,
      accountId: owner,
      createdAt: now - DAY,
      response: '{}',
      inputItems: '[]',
    });
    const deleted = await purgeExpiredUsage(storage.responses, { retentionDays: 30, now: () => now, batchSize: 2 });
    expect(deleted).toBeGreaterThanOrEqual(5);
    for (const id of old) expect(await storage.responses.get(owner, id, 0)).toBeNull();
    expect(await storage.responses.get(owner, fresh, 0)).not.toBeNull();
  });

  it('the route store: expired responses are unknown before the purge runs; the conversation is input then output', async () => {
    let now = 100 * DAY;
    const store = new StoredResponses({ repository: storage.responses, retentionDays: 30, now: () => now });
    const owner = await account();
    const id = `resp_${hex()}`;
    const output = [
      {
        type: 'message',
        id: `msg_${id.slice(5)}_0`,
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: 'hi', annotations: [] }],
      },
    ];
    await store.save(
      owner,
      { id, object: 'response', output },
      JSON.stringify([{ type: 'message', id: 'msg_in', role: 'user', content: 'hello' }]),
    );
    expect((await store.conversation(owner, id)).map((item) => item.id)).toEqual(['msg_in', output[0]!.id]);
    expect(await store.resolveItemReferences(owner, [{ type: 'item_reference', id: output[0]!.id }, 'kept'])).toEqual([
      output[0],
      'kept',
    ]);
    await expect(
      store.resolveItemReferences(await account(), [{ type: 'item_reference', id: output[0]!.id }]),
    ).rejects.toMatchObject({ status: 400, param: 'input[0].id' });
    now += 31 * DAY;
    await expect(store.conversation(owner, id)).rejects.toMatchObject({ status: 404, param: 'previous_response_id' });
    expect(await store.load(owner, id)).toBeNull();
  });
});
