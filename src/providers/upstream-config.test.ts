import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../config/load-config.js';

const directories: string[] = [];
function directoryWith(yaml?: string): string {
  const directory = mkdtempSync(join(tmpdir(), 'tollgate-upstream-config-'));
  directories.push(directory);
  if (yaml !== undefined) writeFileSync(join(directory, 'tollgate.yaml'), yaml);
  return directory;
}
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

describe('upstream resilience settings', () => {
  it('defaults: one credential from OPENAI_API_KEY, 10 s connect, 60 s first byte and idle, 10 min non-stream, 3 attempts, breaker 5 / 30 s', () => {
    const config = loadConfig({ OPENAI_API_KEY: 'sk-one' }, directoryWith());
    expect(config.vendors.openai).toMatchObject({
      apiKey: 'sk-one',
      credentials: [{ apiKey: 'sk-one', baseUrl: 'https://api.openai.com/v1', label: '#1' }],
      timeouts: { connectMs: 10_000, firstByteMs: 60_000, nonStreamMs: 600_000, idleMs: 60_000 },
      retries: { maxAttempts: 3, baseDelayMs: 250, maxDelayMs: 5_000 },
      circuitBreaker: { failureThreshold: 5, cooldownMs: 30_000 },
    });
    // Vendors that are not configured get the same defaults.
    expect(config.vendors.gemini.timeouts.firstByteMs).toBe(60_000);
    expect(config.streamKeepAliveMs).toBe(15_000);
  });

  it('<VENDOR>_API_KEYS gives several credentials at the vendor base URL', () => {
    const config = loadConfig(
      { ANTHROPIC_API_KEYS: 'sk-a, sk-b,,', ANTHROPIC_BASE_URL: 'http://127.0.0.1:1/x/' },
      directoryWith(),
    );
    expect(config.vendors.anthropic.configured).toBe(true);
    expect(config.vendors.anthropic.credentials).toEqual([
      { apiKey: 'sk-a', baseUrl: 'http://127.0.0.1:1/x', label: '#1' },
      { apiKey: 'sk-b', baseUrl: 'http://127.0.0.1:1/x', label: '#2' },
    ]);
    expect(config.demoMode).toBe(false);
  });

  it('reads credentials, timeouts, retries, breaker, fallback and keep-alive from tollgate.yaml', () => {
    const yaml = [
      'streamKeepAliveMs: 50',
      'vendors:',
      '  deepseek:',
      '    credentials:',
      '      - { apiKey: k-primary, label: primary }',
      '      - { apiKey: k-backup, baseUrl: "http://127.0.0.1:7/deepseek" }',
      '    timeouts: { firstByteMs: 500 }',
      '    retries: { maxAttempts: 2 }',
      '    circuitBreaker: { failureThreshold: 1, cooldownMs: 1000 }',
      'models:',
      '  delta-v4-flash: { fallback: beta-5.4 }',
    ].join('\n');
    const config = loadConfig({}, directoryWith(yaml));
    expect(config.streamKeepAliveMs).toBe(50);
    expect(config.vendors.deepseek).toMatchObject({
      configured: true,
      apiKey: 'k-primary',
      credentials: [
        { apiKey: 'k-primary', baseUrl: 'https://api.deepseek.com', label: 'primary' },
        { apiKey: 'k-backup', baseUrl: 'http://127.0.0.1:7/deepseek', label: '#2' },
      ],
      timeouts: { connectMs: 10_000, firstByteMs: 500, nonStreamMs: 600_000, idleMs: 60_000 },
      retries: { maxAttempts: 2, baseDelayMs: 250, maxDelayMs: 5_000 },
      circuitBreaker: { failureThreshold: 1, cooldownMs: 1000 },
    });
    expect(config.models['delta-v4-flash']?.fallback).toBe('beta-5.4');
  });

  it('rejects a bad credential list and unknown timeout names', () => {
    expect(() => loadConfig({}, directoryWith('vendors:\n  openai:\n    credentials: []\n'))).toThrow(ConfigError);
    expect(() => loadConfig({}, directoryWith('vendors:\n  openai:\n    timeouts: { totalMs: 5 }\n'))).toThrow(
      /timeouts/,
    );
    expect(() => loadConfig({ STREAM_KEEPALIVE_MS: 'soon' }, directoryWith())).toThrow(/STREAM_KEEPALIVE_MS/);
  });
});
