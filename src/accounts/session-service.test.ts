import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStorage } from '../storage/open-storage.js';
import type { Storage } from '../storage/types.js';
import { SESSION_IDLE_MS, SESSION_MAX_AGE_MS, SessionService } from './session-service.js';

let directory: string;
let storage: Storage;
let clock = 1_000_000;
let sessions: SessionService;

beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 'tollgate-sessions-'));
  storage = await openStorage(`sqlite:${join(directory, 'db.sqlite')}`);
  await storage.migrate();
  await storage.accounts.create({
    id: 'acct_1',
    email: 'a@example.com',
    passwordHash: 'x',
    role: 'user',
    tier: 'standard',
    createdAt: 0,
  });
  sessions = new SessionService(storage.sessions, () => clock);
});

afterAll(async () => {
  await storage?.close();
  rmSync(directory, { recursive: true, force: true });
});

describe('SessionService', () => {
  it('issues 256-bit url-safe tokens, different every time', () => {
    const tokens = new Set(Array.from({ length: 50 }, () => sessions.newToken()));
    expect(tokens.size).toBe(50);
    for (const token of tokens) expect(SessionService.isToken(token)).toBe(true);
    expect(SessionService.isToken('short')).toBe(false);
    expect(SessionService.isToken(undefined)).toBe(false);
  });

  it('binds the CSRF token to the session token', () => {
    const a = sessions.newToken();
    const b = sessions.newToken();
    expect(SessionService.csrfMatches(a, SessionService.csrfTokenFor(a))).toBe(true);
    expect(SessionService.csrfMatches(a, SessionService.csrfTokenFor(b))).toBe(false);
    expect(SessionService.csrfMatches(a, undefined)).toBe(false);
    expect(SessionService.csrfMatches(a, '')).toBe(false);
    expect(SessionService.csrfTokenFor(a)).not.toContain(a);
  });

  it('resolves a started session until it has been idle 7 days', async () => {
    clock = 1_000_000;
    const token = await sessions.start('acct_1');
    expect((await sessions.resolve(token))?.account.id).toBe('acct_1');
    clock += SESSION_IDLE_MS - 1;
    expect(await sessions.resolve(token)).not.toBeNull(); // and touched
    clock += SESSION_IDLE_MS - 1;
    expect(await sessions.resolve(token)).not.toBeNull();
    clock += SESSION_IDLE_MS;
    expect(await sessions.resolve(token)).toBeNull();
    clock -= SESSION_IDLE_MS;
    expect(await sessions.resolve(token)).toBeNull(); // deleted, not just hidden
  });

  it('ends any session 30 days after it started', async () => {
    clock = 50_000_000;
    const token = await sessions.start('acct_1');
    for (let day = 6; day < 30; day += 6) {
      clock = 50_000_000 + day * 86_400_000;
      expect(await sessions.resolve(token)).not.toBeNull();
    }
    clock = 50_000_000 + SESSION_MAX_AGE_MS;
    expect(await sessions.resolve(token)).toBeNull();
  });

  it('ends the others, or all, of an account', async () => {
    clock = 100_000_000;
    const [a, b, c] = [await sessions.start('acct_1'), await sessions.start('acct_1'), await sessions.start('acct_1')];
    expect(await sessions.endOthers('acct_1', b)).toBe(2);
    expect(await sessions.resolve(a)).toBeNull();
    expect(await sessions.resolve(b)).not.toBeNull();
    expect(await sessions.resolve(c)).toBeNull();
    await sessions.endAll('acct_1');
    expect(await sessions.resolve(b)).toBeNull();
  });

  it('ends every session of a disabled account on sight', async () => {
    clock = 200_000_000;
    const token = await sessions.start('acct_1');
    await storage.accounts.setDisabled('acct_1', true);
    try {
      expect(await sessions.resolve(token)).toBeNull();
      await storage.accounts.setDisabled('acct_1', false);
      expect(await sessions.resolve(token)).toBeNull(); // it ended, it did not just pause
    } finally {
      await storage.accounts.setDisabled('acct_1', false);
    }
  });
});
