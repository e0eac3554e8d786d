import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { TOTP } from 'otpauth';
import { invalidRequest } from '../canonical/errors.js';
import type { IdentityFactorRepository } from '../storage/identity-factor-types.js';

/** RFC 6238's defaults, the ones every authenticator app assumes: SHA-1, six digits, 30-second steps. */
const PERIOD_SECONDS = 30;
/** One step either side: a phone clock half a minute off still works. */
const WINDOW_STEPS = 1;
export const RECOVERY_CODE_COUNT = 10;
const CODE_PATTERN = /^\d{6}$/;

export interface TotpEnrolment {
  /** Base32, for typing into an app by hand. Shown during enrolment only. */
  secret: string;
  /** The `otpauth://` URI the QR code holds. */
  uri: string;
  /** The QR code as an SVG data URL, ready for an `<img src>`. */
  qrCodeDataUrl: string;
}

export type SecondFactorCheck = 'accepted' | 'wrong' | 'replayed';

/**
 * TOTP (RFC 6238, via otpauth) and the single-use recovery codes that stand in for it when the phone is lost.
 * A code is accepted once: the factor remembers the last step it accepted, and a code of that step or an earlier
 * one is refused as a replay, atomically in the database so two racing requests cannot both pass.
 */
export class TotpFactor {
  constructor(
    private readonly store: IdentityFactorRepository,
    private readonly issuer: string,
    private readonly now: () => number = Date.now,
  ) {}

  /** A new secret for the account (replacing an unconfirmed one); refused when TOTP is already on. */
  async begin(accountId: string, label: string): Promise<TotpEnrolment> {
    const { Secret } = await import('otpauth');
    const secret = new Secret({ size: 20 }).base32;
    if (!(await this.store.saveTotpDraft(accountId, secret, this.now()))) {
      throw invalidRequest('Two-step sign-in with an authenticator app is already on. Turn it off first.');
    }
    const uri = (await this.totp(secret, label)).toString();
    const { default: QRCode } = await import('qrcode');
    const svg = await QRCode.toString(uri, { type: 'svg', margin: 1 });
    return { secret, uri, qrCodeDataUrl: `data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}` };
  }

  /** Confirms the enrolment with a first code; returns the ten recovery codes (shown once, stored hashed). */
  async confirm(accountId: string, code: string): Promise<string[]> {
    const factor = await this.store.findTotp(accountId);
    if (factor === null) throw invalidRequest('Start the authenticator app set-up first.');
    if (factor.confirmedAt !== null) throw invalidRequest('Two-step sign-in with an authenticator app is already on.');
    const check = await this.checkSecret(accountId, factor.secret, code);
    if (check !== 'accepted') throw invalidRequest(refusal(check), 'code');
    await this.store.confirmTotp(accountId, this.now());
    return this.newRecoveryCodes(accountId);
  }

  async isOn(accountId: string): Promise<boolean> {
    const factor = await this.store.findTotp(accountId);
    return factor !== null && factor.confirmedAt !== null;
  }

  /** A code from the app, checked against the confirmed factor. */
  async check(accountId: string, code: string): Promise<SecondFactorCheck> {
    const factor = await this.store.findTotp(accountId);
    if (factor === null || factor.confirmedAt === null) return 'wrong';
    return this.checkSecret(accountId, factor.secret, code);
  }

  /** A recovery code: accepted once. Spaces and dashes are ignored, as people copy them. */
  async spendRecoveryCode(accountId: string, code: string): Promise<boolean> {
    const normalized = normalizeRecoveryCode(code);
    if (normalized === null) return false;
    return this.store.spendRecoveryCode(accountId, hashRecoveryCode(normalized), this.now());
  }

  async recoveryCodesLeft(accountId: string): Promise<number> {
    return this.store.countUnusedRecoveryCodes(accountId);
  }

  /** Ten fresh codes replacing the old ones. */
  async newRecoveryCodes(accountId: string): Promise<string[]> {
    const codes = Array.from({ length: RECOVERY_CODE_COUNT }, () => formatRecoveryCode(randomBytes(10)));
    await this.store.replaceRecoveryCodes(
      accountId,
      codes.map((code) => hashRecoveryCode(normalizeRecoveryCode(code)!)),
    );
    return codes;
  }

  async turnOff(accountId: string): Promise<boolean> {
    return this.store.deleteTotp(accountId);
  }

  private async checkSecret(accountId: string, secret: string, code: string): Promise<SecondFactorCheck> {
    const token = code.replace(/\s/g, '');
    if (!CODE_PATTERN.test(token)) return 'wrong';
    const at = this.now();
    const delta = (await this.totp(secret, '')).validate({ token, timestamp: at, window: WINDOW_STEPS });
    if (delta === null) return 'wrong';
    const step = Math.floor(at / 1000 / PERIOD_SECONDS) + delta;
    return (await this.store.acceptTotpStep(accountId, step)) ? 'accepted' : 'replayed';
  }

  /** otpauth and qrcode are loaded by the first enrolment or code, not at start-up: most accounts never use them. */
  private async totp(secret: string, label: string): Promise<TOTP> {
    const { Secret, TOTP } = await import('otpauth');
    return new TOTP({
      issuer: this.issuer,
      label,
      algorithm: 'SHA1',
      digits: 6,
      period: PERIOD_SECONDS,
      secret: Secret.fromBase32(secret),
    });
  }
}

export function refusal(check: SecondFactorCheck): string {
  return check === 'replayed'
    ? 'This code was used already. Wait for the next one in your authenticator app.'
    : 'The code is not correct. Check your authenticator app and try again.';
}

/** `xxxxx-xxxxx`, 80 random bits in lower-case base32 without look-alikes (no 0/o, 1/l). */
const RECOVERY_ALPHABET = 'abcdefghijkmnpqrstuvwxyz23456789';

function formatRecoveryCode(bytes: Buffer): string {
  let bits = 0n;
  for (const byte of bytes) bits = (bits << 8n) | BigInt(byte);
  let text = '';
  for (let index = 0; index < 16; index++) {
    text += RECOVERY_ALPHABET[Number(bits & 31n)];
    bits >>= 5n;
  }
  return `${text.slice(0, 8)}-${text.slice(8)}`;
}

function normalizeRecoveryCode(code: string): string | null {
  const text = code.toLowerCase().replace(/[\s-]/g, '');
  if (text.length !== 16) return null;
  for (const character of text) if (!RECOVERY_ALPHABET.includes(character)) return null;
  return text;
}

function hashRecoveryCode(normalized: string): string {
  return createHash('sha256').update(`tollgate-recovery\0${normalized}`, 'utf8').digest('hex');
}

/** Constant-time comparison of two strings of text (tokens, hashes). */
export function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a, 'utf8');
  const right = Buffer.from(b, 'utf8');
  return left.length === right.length && timingSafeEqual(left, right);
}
