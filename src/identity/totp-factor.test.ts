import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createAccountIn,
  postgresBackend,
  sqliteBackend,
  type TestDatabase,
} from '../../test/helpers/storage-backends.js';
import type { Storage } from '../storage/types.js';
import { RECOVERY_CODE_COUNT, TotpFactor } from './totp-factor.js';

const STEP_MS = 30_000;

/** The code an authenticator app shows for `secret` at `at`. */
function codeAt(secret: string, at: number): string {
  return new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30, algorithm: 'SHA1' }).generate({
    timestamp: at,
  });
}

describe.each([sqliteBackend, postgresBackend])('TOTP and recovery codes on $name', (backend) => {
  let database: TestDatabase;
  let storage: Storage;
  // A clock this test moves: 30-second steps are the unit of replay.
  let clock = 1_800_000_000_000;
  let totp: TotpFactor;
  let accountCounter = 0;

  beforeAll(async () => {
    database = await backend.createDatabase();
    storage = await database.open();
    await storage.migrate();
    totp = new TotpFactor(storage.identityFactors, 'Tollgate', () => clock);
  });

  afterAll(async () => {
    await storage?.close();
    await database?.drop();
  });

  const newAccount = (): Promise<string> => createAccountIn(storage, `acct_totp_${++accountCounter}`);

  async function enrolled(): Promise<{ id: string; secret: string; recovery: string[] }> {
    const id = await newAccount();
    const { secret, uri, qrCodeDataUrl } = await totp.begin(id, `${id}@example.com`);
    expect(uri).toMatch(/^otpauth:\/\/totp\/Tollgate:.*secret=/);
    expect(qrCodeDataUrl).toMatch(/^data:image\/svg\+xml;base64,/);
    expect(Buffer.from(qrCodeDataUrl.split(',')[1]!, 'base64').toString()).toContain('<svg');
    expect(await totp.isOn(id)).toBe(false);
    const recovery = await totp.confirm(id, codeAt(secret, clock));
    expect(await totp.isOn(id)).toBe(true);
    clock += STEP_MS;
    return { id, secret, recovery };
  }

  it('accepts the current code once and refuses its replay in the same step', async () => {
    const { id, secret } = await enrolled();
    const code = codeAt(secret, clock);
    expect(await totp.check(id, code)).toBe('accepted');
    expect(await totp.check(id, code)).toBe('replayed');
    // Still refused a few seconds later, within the same step.
    clock += 5_000;
    expect(await totp.check(id, code)).toBe('replayed');
    clock += STEP_MS;
    expect(await totp.check(id, codeAt(secret, clock))).toBe('accepted');
  });

  it('refuses the code of an earlier step once a later one was used, even inside the window', async () => {
    const { id, secret } = await enrolled();
    const earlier = codeAt(secret, clock - STEP_MS);
    expect(await totp.check(id, codeAt(secret, clock))).toBe('accepted');
    expect(await totp.check(id, earlier)).toBe('replayed');
  });

  it('accepts one step of clock drift either way and refuses two', async () => {
    const { id, secret } = await enrolled();
    expect(await totp.check(id, codeAt(secret, clock + STEP_MS))).toBe('accepted');
    clock += 4 * STEP_MS;
    expect(await totp.check(id, codeAt(secret, clock - 2 * STEP_MS))).toBe('wrong');
    expect(await totp.check(id, codeAt(secret, clock + 2 * STEP_MS))).toBe('wrong');
  });

  it('refuses wrong and malformed codes', async () => {
    const { id, secret } = await enrolled();
    const right = codeAt(secret, clock);
    const wrong = String((Number(right) + 1) % 1_000_000).padStart(6, '0');
    expect(await totp.check(id, wrong)).toBe('wrong');
    for (const bad of ['', '12345', '1234567', 'abcdef', ' 12 34 5']) expect(await totp.check(id, bad)).toBe('wrong');
    // The wrong tries did not spend the step: the right code still works.
    expect(await totp.check(id, right)).toBe('accepted');
  });

  it('lets two racing requests with the same code pass only once', async () => {
    const { id, secret } = await enrolled();
    const code = codeAt(secret, clock);
    const results = await Promise.all(Array.from({ length: 8 }, () => totp.check(id, code)));
    expect(results.filter((result) => result === 'accepted')).toHaveLength(1);
    expect(results.filter((result) => result === 'replayed')).toHaveLength(7);
  });

  it('confirms the enrolment only with a right code, and never twice', async () => {
    const id = await newAccount();
    const { secret } = await totp.begin(id, 'x@example.com');
    await expect(totp.confirm(id, '000000' === codeAt(secret, clock) ? '111111' : '000000')).rejects.toThrow(
      /not correct/,
    );
    expect(await totp.isOn(id)).toBe(false);
    await totp.confirm(id, codeAt(secret, clock));
    await expect(totp.begin(id, 'x@example.com')).rejects.toThrow(/already on/);
    await expect(totp.confirm(id, codeAt(secret, clock + STEP_MS))).rejects.toThrow(/already on/);
  });

  it('gives ten different recovery codes, each good once, stored only hashed', async () => {
    const { id, recovery } = await enrolled();
    expect(recovery).toHaveLength(RECOVERY_CODE_COUNT);
    expect(new Set(recovery).size).toBe(RECOVERY_CODE_COUNT);
    for (const code of recovery) expect(code).toMatch(/^[a-z2-9]{8}-[a-z2-9]{8}$/);
    expect(await totp.recoveryCodesLeft(id)).toBe(10);
    // Typed in capitals without the dash still counts, once.
    expect(await totp.spendRecoveryCode(id, recovery[0]!.toUpperCase().replace('-', ''))).toBe(true);
    expect(await totp.spendRecoveryCode(id, recovery[0]!)).toBe(false);
    expect(await totp.recoveryCodesLeft(id)).toBe(9);
    // Another account's code is not this one's.
    const other = await enrolled();
    expect(await totp.spendRecoveryCode(id, other.recovery[0]!)).toBe(false);
    expect(await totp.spendRecoveryCode(id, 'not-a-code')).toBe(false);
    const found = await storage.identityFactors.findTotp(id);
    expect(found?.secret).toBeDefined();
    // New codes replace the old ones.
    const fresh = await totp.newRecoveryCodes(id);
    expect(await totp.spendRecoveryCode(id, recovery[1]!)).toBe(false);
    expect(await totp.spendRecoveryCode(id, fresh[0]!)).toBe(true);
  });

  it('turning off removes the factor and its recovery codes', async () => {
    const { id, secret, recovery } = await enrolled();
    expect(await totp.turnOff(id)).toBe(true);
    expect(await totp.isOn(id)).toBe(false);
    expect(await totp.check(id, codeAt(secret, clock))).toBe('wrong');
    expect(await totp.spendRecoveryCode(id, recovery[0]!)).toBe(false);
  });
});
