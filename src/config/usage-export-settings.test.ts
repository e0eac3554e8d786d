import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from './load-config.js';

const directories: string[] = [];
function directoryWith(yaml?: string): string {
  const directory = mkdtempSync(join(tmpdir(), 'tollgate-config-'));
  directories.push(directory);
  if (yaml !== undefined) writeFileSync(join(directory, 'tollgate.yaml'), yaml);
  return directory;
}
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

const SECRET = 'a-secret-of-some-length';

describe('usage export settings', () => {
  it('has no sinks by default, and waits out a hold before exporting', () => {
    const { usageExport } = loadConfig({}, directoryWith());
    expect(usageExport).toEqual({ sinks: [], settleDelayMs: 15 * 60_000 + 30_000 + 60_000, allowHttpLoopback: false });
  });

  it('reads a webhook and a file sink from the environment, and more from the file with secrets from the environment', () => {
    const directory = directoryWith(
      [
        'usageExportSinks:',
        '  - type: webhook',
        '    name: warehouse',
        '    url: https://hooks.example.com/usage',
        '    batchSize: 50',
        '  - type: ndjson',
        '    name: shipper',
        '    directory: /var/log/tollgate',
      ].join('\n'),
    );
    const { usageExport } = loadConfig(
      {
        USAGE_EXPORT_WEBHOOK_URL: 'https://billing.example.com/hook',
        USAGE_EXPORT_WEBHOOK_SECRET: SECRET,
        USAGE_EXPORT_NDJSON_DIR: '/tmp/usage',
        USAGE_EXPORT_FLUSH_MS: '250',
        USAGE_EXPORT_SETTLE_DELAY_MS: '0',
        USAGE_EXPORT_WAREHOUSE_SECRET: 'warehouse-secret-123',
      },
      directory,
    );
    expect(usageExport.settleDelayMs).toBe(0);
    expect(usageExport.sinks).toEqual([
      expect.objectContaining({
        type: 'webhook',
        name: 'webhook',
        url: 'https://billing.example.com/hook',
        flushIntervalMs: 250,
      }),
      expect.objectContaining({ type: 'ndjson', name: 'ndjson', directory: '/tmp/usage', flushIntervalMs: 250 }),
      expect.objectContaining({ type: 'webhook', name: 'warehouse', secret: 'warehouse-secret-123', batchSize: 50 }),
      expect.objectContaining({ type: 'ndjson', name: 'shipper', directory: '/var/log/tollgate' }),
    ]);
  });

  it('refuses a webhook that is not https, naming the setting', () => {
    expect(() =>
      loadConfig(
        { USAGE_EXPORT_WEBHOOK_URL: 'http://billing.example.com/hook', USAGE_EXPORT_WEBHOOK_SECRET: SECRET },
        directoryWith(),
      ),
    ).toThrow(/USAGE_EXPORT_WEBHOOK_URL \(usageExportWebhookUrl\): must be https/);
    expect(() =>
      loadConfig(
        { USAGE_EXPORT_WEBHOOK_URL: 'https://10.0.0.8/hook', USAGE_EXPORT_WEBHOOK_SECRET: SECRET },
        directoryWith(),
      ),
    ).toThrow(/USAGE_EXPORT_WEBHOOK_URL.*private/);
    expect(() =>
      loadConfig(
        {},
        directoryWith(
          'usageExportSinks:\n  - {type: webhook, name: w, url: "http://127.0.0.1:9/", secret: xxxxxxxxxxxxxxxxxx}\n',
        ),
      ),
    ).toThrow(/usageExportSinks\.0\.url: must be https/);
  });

  it('allows http on loopback only with WEBHOOK_ALLOW_HTTP_LOOPBACK', () => {
    const env = { USAGE_EXPORT_WEBHOOK_URL: 'http://127.0.0.1:9000/hook', USAGE_EXPORT_WEBHOOK_SECRET: SECRET };
    expect(() => loadConfig(env, directoryWith())).toThrow(/USAGE_EXPORT_WEBHOOK_URL/);
    const { usageExport } = loadConfig({ ...env, WEBHOOK_ALLOW_HTTP_LOOPBACK: 'true' }, directoryWith());
    expect(usageExport.allowHttpLoopback).toBe(true);
    expect(usageExport.sinks[0]).toMatchObject({ url: 'http://127.0.0.1:9000/hook' });
  });

  it('needs a secret with the URL, and unique sink names', () => {
    expect(() => loadConfig({ USAGE_EXPORT_WEBHOOK_URL: 'https://b.example.com/' }, directoryWith())).toThrow(
      /USAGE_EXPORT_WEBHOOK_SECRET/,
    );
    expect(() =>
      loadConfig(
        { USAGE_EXPORT_NDJSON_DIR: '/tmp/x' },
        directoryWith('usageExportSinks:\n  - {type: ndjson, name: ndjson, directory: /tmp/y}\n'),
      ),
    ).toThrow(/a sink named ndjson exists already/);
  });
});
