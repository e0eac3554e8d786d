import { describe, expect, it } from 'vitest';
import type { SsoProviderSettings } from '../config/sso-settings.js';
import { mappedRole, provisioningOrganisations, targetOrganisation } from './sso-provisioning.js';

const provider = (provisioning: SsoProviderSettings['provisioning']): SsoProviderSettings => ({
  id: 'acme',
  name: 'Acme',
  issuer: 'https://sso.acme.example',
  clientId: 'c',
  clientSecret: 's',
  allowedDomains: [],
  requiredForDomains: [],
  adminValues: ['admin'],
  provisioning,
});

const settings = provider({
  organisation: 'org_default',
  domains: { 'Labs.Example': 'org_labs' },
  roleClaim: 'groups',
  roles: { 'tg-admins': 'admin', 'tg-billing': 'billing', 'tg-owners': 'owner' },
  defaultRole: 'developer',
});

describe('SSO provisioning rules', () => {
  it("picks the email domain's organisation, else the provider's", () => {
    expect(targetOrganisation(settings, 'ada@labs.example')).toBe('org_labs');
    expect(targetOrganisation(settings, 'ada@elsewhere.example')).toBe('org_default');
    expect(targetOrganisation(provider(undefined), 'ada@labs.example')).toBeUndefined();
    expect(provisioningOrganisations(settings).sort()).toEqual(['org_default', 'org_labs']);
  });

  it('maps the claim to the role that may do most, the default when nothing maps', () => {
    expect(mappedRole(settings, { groups: ['tg-billing', 'tg-admins'] })).toBe('admin');
    expect(mappedRole(settings, { groups: 'tg-owners' })).toBe('owner');
    expect(mappedRole(settings, { groups: ['unrelated'] })).toBe('developer');
    expect(mappedRole(settings, {})).toBe('developer');
    // A claim value named like an Object property maps to nothing.
    expect(mappedRole(settings, { groups: ['constructor', 'toString'] })).toBe('developer');
  });
});
