import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './load-config.js';

const cwd = mkdtempSync(join(tmpdir(), 'tollgate-config-'));
const load = (env: Record<string, string>) => loadConfig(env, cwd);

describe('dashboard settings', () => {
  it('enables Stripe only with both the secret key and the webhook secret', () => {
    expect(load({}).stripe).toBeUndefined();
    expect(load({ STRIPE_SECRET_KEY: 'sk_test_1', STRIPE_WEBHOOK_SECRET: 'whsec_1' }).stripe).toEqual({
      secretKey: 'sk_test_1',
      webhookSecret: 'whsec_1',
    });
    expect(() => load({ STRIPE_SECRET_KEY: 'sk_test_1' })).toThrow(/STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET/);
    expect(() => load({ STRIPE_SECRET_KEY: 'sk_test_1', STRIPE_WEBHOOK_SECRET: 'nope' })).toThrow(ConfigError);
    // Errors name the setting, never echo the secret.
    expect(() => load({ STRIPE_SECRET_KEY: 'pk_live_secretvalue', STRIPE_WEBHOOK_SECRET: 'whsec_1' })).toThrow(
      /STRIPE_SECRET_KEY/,
    );
    expect(() => load({ STRIPE_SECRET_KEY: 'pk_live_secretvalue', STRIPE_WEBHOOK_SECRET: 'whsec_1' })).not.toThrow(
      /secretvalue/,
    );
    expect(load({ STRIPE_SECRET_KEY: '', STRIPE_WEBHOOK_SECRET: '' }).stripe).toBeUndefined(); // compose's empty defaults
  });

  it('reads PUBLIC_BASE_URL and TRUST_PROXY', () => {
    expect(load({ PUBLIC_BASE_URL: 'https://gateway.example.com/' }).publicBaseUrl).toBe('https://gateway.example.com');
    expect(() => load({ PUBLIC_BASE_URL: 'gateway.example.com' })).toThrow(/PUBLIC_BASE_URL/);
    expect(load({}).trustProxy).toBe(false);
    expect(load({ TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    expect(load({ TRUST_PROXY: '1' }).trustProxy).toBe(1); // one hop, not "trust everything"
    expect(load({ TRUST_PROXY: '0' }).trustProxy).toBe(false);
    expect(load({ TRUST_PROXY: '10.0.0.0/8,127.0.0.1' }).trustProxy).toBe('10.0.0.0/8,127.0.0.1');
  });
});
