import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStorage } from '../storage/open-storage.js';
import type { Storage } from '../storage/types.js';
import { LoginThrottle, TooManyLoginAttemptsError } from './login-throttle.js';

let directory: string;
let storage: Storage;
let clock = 0;
let throttle: LoginThrottle;
const WINDOW = 15 * 60_000;

beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 'tollgate-throttle-'));
  storage = await openStorage(`sqlite:${join(directory, 'db.sqlite')}`);
  await storage.migrate();
  throttle = new LoginThrottle(
    storage.loginFailures,
    { windowMs: WINDOW, maxPerEmailAndIp: 3, maxPerIp: 5 },
    () => clock,
  );
});

afterAll(async () => {
  await storage?.close();
  rmSync(directory, { recursive: true, force: true });
});

async function fail(email: string, ip: string): Promise<void> {
  await throttle.begin(email, ip); // never told it succeeded: a failure
}

describe('LoginThrottle', () => {
  it('refuses the attempt after the limit per email from one IP, for the rolling window, saying when to retry', async () => {
    clock = 1_000_000;
    for (let index = 0; index < 3; index++) {
      await fail('a@example.com', '10.0.0.1');
      clock += 60_000;
    }
    const error = await throttle.begin('A@Example.com', '10.0.0.1').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(TooManyLoginAttemptsError);
    // The oldest of the three failures leaves the window first: 15 minutes after it, 3 minutes ago.
    expect((error as TooManyLoginAttemptsError).retryAfterSeconds).toBe((WINDOW - 3 * 60_000) / 1000);
    clock = 1_000_000 + WINDOW;
    await expect(throttle.begin('a@example.com', '10.0.0.1')).resolves.toBeDefined();
  });

  it('does not lock the account out from other addresses: its owner still logs in from elsewhere', async () => {
    clock = 5_000_000;
    for (let index = 0; index < 3; index++) await fail('owner@example.com', '10.6.6.6');
    await expect(throttle.begin('owner@example.com', '10.6.6.6')).rejects.toBeInstanceOf(TooManyLoginAttemptsError);
    const owner = await throttle.begin('owner@example.com', '10.7.7.7');
    await owner.succeeded();
    // The owner's success does not give the guesser more tries.
    await expect(throttle.begin('owner@example.com', '10.6.6.6')).rejects.toBeInstanceOf(TooManyLoginAttemptsError);
  });

  it('refuses a client IP after its limit across emails, without locking those emails elsewhere', async () => {
    clock = 10_000_000;
    for (let index = 0; index < 5; index++) await fail(`user${index}@example.com`, '10.9.9.9');
    await expect(throttle.begin('new@example.com', '10.9.9.9')).rejects.toBeInstanceOf(TooManyLoginAttemptsError);
    await expect(throttle.begin('user0@example.com', '10.1.1.1')).resolves.toBeDefined();
  });

  it('forgets the email failures from that IP on success and does not count refused attempts', async () => {
    clock = 20_000_000;
    await fail('b@example.com', '10.2.0.1');
    await fail('b@example.com', '10.2.0.1');
    const attempt = await throttle.begin('b@example.com', '10.2.0.1');
    await attempt.succeeded();
    await fail('b@example.com', '10.2.0.1');
    await fail('b@example.com', '10.2.0.1');
    await fail('b@example.com', '10.2.0.1');
    for (let index = 0; index < 5; index++)
      await expect(throttle.begin('b@example.com', '10.2.0.1')).rejects.toBeInstanceOf(TooManyLoginAttemptsError);
    clock += WINDOW;
    await expect(throttle.begin('b@example.com', '10.2.0.1')).resolves.toBeDefined();
  });

  it('stores no email address in clear', async () => {
    clock = 30_000_000;
    await fail('private.person@example.com', '10.3.0.1');
    expect(await storage.loginFailures.recent('email:private.person@example.com ip:10.3.0.1', 0, 10)).toEqual([]);
    const hashed = `email:${createHash('sha256').update('private.person@example.com').digest('hex')} ip:10.3.0.1`;
    expect(await storage.loginFailures.recent(hashed, 0, 10)).toHaveLength(1);
  });
});
