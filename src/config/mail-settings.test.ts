import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from './load-config.js';

const cwd = mkdtempSync(join(tmpdir(), 'tollgate-config-'));
const load = (env: Record<string, string>) => loadConfig(env, cwd);
const MAIL = {
  SMTP_URL: 'smtp://mailer:s3cret-pass@mail.example.com:587',
  MAIL_FROM: 'Tollgate <noreply@example.com>',
  PUBLIC_BASE_URL: 'https://gateway.example.com',
};

describe('mail settings', () => {
  it('sends no mail and requires no verified email by default', () => {
    expect(load({}).mail).toBeUndefined();
    expect(load({}).requireVerifiedEmail).toBe(false);
    expect(load({ REQUIRE_VERIFIED_EMAIL: 'true' }).requireVerifiedEmail).toBe(true);
  });

  it('requires a verified email by default once mail is configured, unless turned off', () => {
    expect(load(MAIL).mail).toEqual({ smtpUrl: MAIL.SMTP_URL, from: MAIL.MAIL_FROM });
    expect(load(MAIL).requireVerifiedEmail).toBe(true);
    expect(load({ ...MAIL, REQUIRE_VERIFIED_EMAIL: 'false' }).requireVerifiedEmail).toBe(false);
  });

  it('needs MAIL_FROM and PUBLIC_BASE_URL with SMTP_URL, naming them, never echoing the password', () => {
    expect(() => load({ ...MAIL, MAIL_FROM: '' })).toThrow(/MAIL_FROM/);
    expect(() => load({ ...MAIL, PUBLIC_BASE_URL: '' })).toThrow(/PUBLIC_BASE_URL/);
    expect(() => load({ ...MAIL, SMTP_URL: 'http://mail.example.com' })).toThrow(/SMTP_URL/);
    expect(() => load({ ...MAIL, MAIL_FROM: '' })).not.toThrow(/s3cret-pass/);
  });
});
