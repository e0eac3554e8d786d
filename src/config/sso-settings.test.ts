import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './load-config.js';

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function withYaml(yaml: string): string {
  const directory = mkdtempSync(join(tmpdir(), 'tollgate-sso-config-'));
  directories.push(directory);
  writeFileSync(join(directory, 'tollgate.yaml'), yaml);
  return directory;
}

const PROVIDER = `ssoProviders:
  - id: acme-corp
    name: Acme
    issuer: https://sso.acme.example/realms/staff
    clientId: tollgate
    clientSecret: in-the-file
`;

describe('ssoProviders', () => {
  it('is empty by default', () => {
    expect(loadConfig({}, withYaml('')).ssoProviders).toEqual([]);
  });

  it('reads a provider with its defaults, the secret from SSO_<ID>_CLIENT_SECRET when set', () => {
    const directory = withYaml(PROVIDER);
    expect(loadConfig({}, directory).ssoProviders[0]).toEqual({
      id: 'acme-corp',
      name: 'Acme',
      issuer: 'https://sso.acme.example/realms/staff',
      clientId: 'tollgate',
      clientSecret: 'in-the-file',
      allowedDomains: [],
      requiredForDomains: [],
      adminValues: ['admin'],
    });
    expect(loadConfig({ SSO_ACME_CORP_CLIENT_SECRET: 'from-env' }, directory).ssoProviders[0]?.clientSecret).toBe(
      'from-env',
    );
  });

  it.each([
    [
      PROVIDER.replace('https://sso.acme.example', 'http://sso.acme.example'),
      /https:\/\/ \(http:\/\/ only on loopback\)/,
    ],
    [PROVIDER.replace('id: acme-corp', 'id: Acme Corp'), /lower-case letters/],
    [`${PROVIDER}    requiredForDomains: [not a domain]\n`, /domain name/],
    [`${PROVIDER}${PROVIDER.replace('ssoProviders:\n', '')}`, /ids must be unique/],
  ])('refuses bad settings with the reason', (yaml, reason) => {
    expect(() => loadConfig({}, withYaml(yaml))).toThrow(ConfigError);
    expect(() => loadConfig({}, withYaml(yaml))).toThrow(reason);
  });

  it('allows plain http for an issuer on loopback', () => {
    const yaml = PROVIDER.replace('https://sso.acme.example/realms/staff', 'http://127.0.0.1:8081');
    expect(loadConfig({}, withYaml(yaml)).ssoProviders[0]?.issuer).toBe('http://127.0.0.1:8081');
  });
});
