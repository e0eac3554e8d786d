import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './load-config.js';

const directories: string[] = [];
function emptyDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), 'tollgate-config-'));
  directories.push(directory);
  return directory;
}
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

describe('loadConfig', () => {
  it('defaults to port 8080, SQLite under ./data and demo mode without vendor settings', () => {
    const config = loadConfig({}, emptyDirectory());
    expect(config).toMatchObject({
      port: 8080,
      host: '0.0.0.0',
      databaseUrl: 'sqlite:./data/tollgate.db',
      demoMode: true,
    });
    expect(config.vendors.openai).toMatchObject({
      apiKey: undefined,
      baseUrl: 'https://api.openai.com/v1',
      configured: false,
    });
    expect(config.vendors.anthropic.baseUrl).toBe('https://api.anthropic.com');
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('reads vendor keys and base URLs from the environment; any configured vendor ends demo mode', () => {
    const config = loadConfig(
      { OPENAI_API_KEY: 'sk-test', DEEPSEEK_BASE_URL: 'http://127.0.0.1:9999/deepseek/', PORT: '9000' },
      emptyDirectory(),
    );
    expect(config.demoMode).toBe(false);
    expect(config.port).toBe(9000);
    expect(config.vendors.openai).toMatchObject({ apiKey: 'sk-test', configured: true });
    expect(config.vendors.deepseek).toMatchObject({ baseUrl: 'http://127.0.0.1:9999/deepseek', configured: true });
    expect(config.vendors.gemini.configured).toBe(false);
  });

  it('reads the operations settings: TLS files in pairs, shutdown grace, metrics token, timeouts and header size', () => {
    expect(loadConfig({}, emptyDirectory())).toMatchObject({
      tls: undefined,
      shutdownGraceMs: 30_000,
      metricsToken: undefined,
      requestTimeoutMs: 30_000,
      headersTimeoutMs: 10_000,
      maxHeaderBytes: 16_384,
    });
    const config = loadConfig(
      {
        TLS_CERT_FILE: '/etc/tls/cert.pem',
        TLS_KEY_FILE: '/etc/tls/key.pem',
        SHUTDOWN_GRACE_MS: '5000',
        METRICS_TOKEN: 'a-long-scraper-token',
        REQUEST_TIMEOUT_MS: '60000',
        HEADERS_TIMEOUT_MS: '5000',
        MAX_HEADER_BYTES: '32768',
      },
      emptyDirectory(),
    );
    expect(config).toMatchObject({
      tls: { certFile: '/etc/tls/cert.pem', keyFile: '/etc/tls/key.pem' },
      shutdownGraceMs: 5_000,
      metricsToken: 'a-long-scraper-token',
      requestTimeoutMs: 60_000,
      headersTimeoutMs: 5_000,
      maxHeaderBytes: 32_768,
    });
    expect(() => loadConfig({ TLS_CERT_FILE: '/etc/tls/cert.pem' }, emptyDirectory())).toThrow(
      /TLS_KEY_FILE.*set both TLS_CERT_FILE and TLS_KEY_FILE/,
    );
    expect(() => loadConfig({ METRICS_TOKEN: 'short' }, emptyDirectory())).toThrow(/METRICS_TOKEN.*at least 16/);
    expect(() => loadConfig({ SHUTDOWN_GRACE_MS: 'soon' }, emptyDirectory())).toThrow(ConfigError);
    expect(() => loadConfig({ HEADERS_TIMEOUT_MS: '40000' }, emptyDirectory())).toThrow(
      /HEADERS_TIMEOUT_MS.*must not exceed REQUEST_TIMEOUT_MS/,
    );
  });

  it('reads retention and sweeper timers; a reservation TTL under 60 s needs TOLLGATE_SHORT_TIMERS', () => {
    expect(loadConfig({}, emptyDirectory())).toMatchObject({
      usageRetentionDays: 90,
      reservationTtlMs: 900_000,
      sweepIntervalMs: 30_000,
    });
    const env = { USAGE_RETENTION_DAYS: '0', RESERVATION_TTL_MS: '2000', SWEEP_INTERVAL_MS: '500' };
    expect(() => loadConfig(env, emptyDirectory())).toThrow(
      /RESERVATION_TTL_MS \(reservationTtlMs\): must be at least 60000/,
    );
    expect(loadConfig({ ...env, TOLLGATE_SHORT_TIMERS: '1' }, emptyDirectory())).toMatchObject({
      usageRetentionDays: 0,
      reservationTtlMs: 2_000,
      sweepIntervalMs: 500,
    });
    expect(() => loadConfig({ RESERVATION_TTL_MS: '999', TOLLGATE_SHORT_TIMERS: '1' }, emptyDirectory())).toThrow(
      /RESERVATION_TTL_MS/,
    );
    expect(() => loadConfig({ USAGE_RETENTION_DAYS: '-1' }, emptyDirectory())).toThrow(/USAGE_RETENTION_DAYS/);
  });

  it('TOLLGATE_DEMO forces demo mode even with keys', () => {
    expect(loadConfig({ OPENAI_API_KEY: 'x', TOLLGATE_DEMO: 'true' }, emptyDirectory()).demoMode).toBe(true);
  });

  it('merges tollgate.yaml under the environment', () => {
    const directory = emptyDirectory();
    writeFileSync(
      join(directory, 'tollgate.yaml'),
      'port: 7000\nhost: 127.0.0.1\nvendors:\n  anthropic:\n    apiKey: from-file\nmodels:\n  beta-5.4:\n    upstreamModel: gpt-5.4-pinned\n',
    );
    const config = loadConfig({ PORT: '7001' }, directory);
    expect(config.port).toBe(7001);
    expect(config.host).toBe('127.0.0.1');
    expect(config.vendors.anthropic).toMatchObject({ apiKey: 'from-file', configured: true });
    expect(config.models['beta-5.4']).toEqual({ upstreamModel: 'gpt-5.4-pinned' });
  });

  it('reports every invalid setting by its environment name', () => {
    let error: unknown;
    try {
      loadConfig({ PORT: 'eighty', OPENAI_BASE_URL: 'ftp://example.com', LOG_LEVEL: 'loud' }, emptyDirectory());
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toMatch(/PORT/);
    expect(message).toMatch(/OPENAI_BASE_URL/);
    expect(message).toMatch(/LOG_LEVEL/);
  });

  it('rejects unknown settings in tollgate.yaml and a missing TOLLGATE_CONFIG file', () => {
    const directory = emptyDirectory();
    writeFileSync(join(directory, 'tollgate.yaml'), 'prot: 8080\n');
    expect(() => loadConfig({}, directory)).toThrow(/prot/);
    expect(() => loadConfig({ TOLLGATE_CONFIG: join(directory, 'missing.yaml') }, directory)).toThrow(/does not exist/);
  });
});
