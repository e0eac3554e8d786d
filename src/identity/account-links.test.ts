import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStorage } from '../storage/open-storage.js';
import type { Storage } from '../storage/types.js';
import { AccountLinks, hashLinkToken, LINK_LIFETIME_MS, LinkRefusedError } from './account-links.js';
import { safeRedirectPath } from './safe-redirect.js';
import { userAgentLabel } from './user-agent-label.js';

let directory: string;
let storage: Storage;
let clock = 1_000_000;
let links: AccountLinks;
const ACCOUNT = 'acct_links';

beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 'tollgate-links-'));
  storage = await openStorage(`sqlite:${join(directory, 'db.sqlite')}`);
  await storage.migrate();
  await storage.accounts.create({
    id: ACCOUNT,
    email: 'links@example.com',
    passwordHash: 'x',
    role: 'user',
    tier: 'standard',
    createdAt: 0,
  });
  links = new AccountLinks(storage.identity, () => clock);
});

afterAll(async () => {
  await storage?.close();
  rmSync(directory, { recursive: true, force: true });
});

async function refusal(promise: Promise<unknown>): Promise<string> {
  const error = await promise.catch((caught: unknown) => caught);
  expect(error).toBeInstanceOf(LinkRefusedError);
  return (error as LinkRefusedError).problem;
}

describe('AccountLinks', () => {
  it('stores only the hash of the token, and works until its lifetime ends', async () => {
    const token = await links.issue('reset_password', ACCOUNT, 'links@example.com');
    expect(await storage.identity.findToken(token)).toBeNull();
    expect((await storage.identity.findToken(hashLinkToken(token)))?.expiresAt).toBe(
      clock + LINK_LIFETIME_MS.reset_password,
    );
    clock += LINK_LIFETIME_MS.reset_password - 1;
    await expect(links.check(token, 'reset_password')).resolves.toMatchObject({ accountId: ACCOUNT });
    clock += 1;
    expect(await refusal(links.check(token, 'reset_password'))).toBe('expired');
  });

  it('is used once, for its own purpose only; a newer link replaces it', async () => {
    const first = await links.issue('verify_email', ACCOUNT, 'links@example.com');
    expect(await refusal(links.check(first, 'reset_password'))).toBe('invalid');
    const second = await links.issue('verify_email', ACCOUNT, 'links@example.com');
    expect(await refusal(links.check(first, 'verify_email'))).toBe('used');
    const record = await links.check(second, 'verify_email');
    await links.consume(record);
    expect(await refusal(links.consume(record))).toBe('used');
    expect(await refusal(links.check(second, 'verify_email'))).toBe('used');
  });

  it('refuses a tampered or malformed token', async () => {
    const token = await links.issue('reset_password', ACCOUNT, 'links@example.com');
    const tampered = `${token[0] === 'A' ? 'B' : 'A'}${token.slice(1)}`;
    expect(await refusal(links.check(tampered, 'reset_password'))).toBe('invalid');
    expect(await refusal(links.check(`${token}x`, 'reset_password'))).toBe('invalid');
    expect(await refusal(links.check('', 'reset_password'))).toBe('invalid');
  });
});

describe('safeRedirectPath', () => {
  it('keeps gateway paths and refuses anything that leaves the gateway', () => {
    expect(safeRedirectPath('/keys?tab=new')).toBe('/keys?tab=new');
    expect(safeRedirectPath(undefined)).toBeUndefined();
    for (const bad of ['https://evil.example', '//evil.example', '/\\evil.example', 'keys', '/\t/evil.example']) {
      expect(() => safeRedirectPath(bad)).toThrow(/path on this gateway/);
    }
  });
});

describe('userAgentLabel', () => {
  it('names browser and system families', () => {
    expect(
      userAgentLabel(
        'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0 Safari/537.36 Edg/130.0',
      ),
    ).toBe('Edge on Windows');
    expect(
      userAgentLabel(
        'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0 Safari/537.36',
      ),
    ).toBe('Chrome on macOS');
    expect(userAgentLabel('curl/8.5.0')).toBe('curl');
    expect(userAgentLabel(null)).toBe('Unknown device');
  });
});
