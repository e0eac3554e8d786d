import { describe, expect, it } from 'vitest';
import { signInPolicyRefusal } from './sign-in-policy.js';

const none = { requireSecondFactor: false, requiredSsoProviders: [] };
const twoStep = { requireSecondFactor: true, requiredSsoProviders: [] };
const acmeOnly = { requireSecondFactor: false, requiredSsoProviders: ['acme'] };

describe('signInPolicyRefusal', () => {
  it('lets every session in when the organisation requires nothing', () => {
    expect(signInPolicyRefusal(none, { signInMethod: 'password' }, false)).toBeNull();
  });

  it('asks a person without a second factor to enrol, and a password-only session to sign in again', () => {
    expect(signInPolicyRefusal(twoStep, { signInMethod: 'password' }, false)?.code).toBe(
      'second_factor_enrolment_required',
    );
    expect(signInPolicyRefusal(twoStep, { signInMethod: 'sso', ssoProvider: 'acme' }, false)?.code).toBe(
      'second_factor_enrolment_required',
    );
    expect(signInPolicyRefusal(twoStep, { signInMethod: 'password' }, true)?.code).toBe(
      'second_factor_session_required',
    );
    // Sessions from before the policy recorded no method: a password alone.
    expect(signInPolicyRefusal(twoStep, {}, true)?.code).toBe('second_factor_session_required');
    for (const signInMethod of ['second_factor', 'passkey', 'sso'] as const)
      expect(signInPolicyRefusal(twoStep, { signInMethod, ssoProvider: 'acme' }, true)).toBeNull();
  });

  it('lets in only sessions of a required provider, naming it', () => {
    const refusal = signInPolicyRefusal(acmeOnly, { signInMethod: 'second_factor' }, true, () => 'Acme Login');
    expect(refusal?.code).toBe('sso_required_by_organisation');
    expect(refusal?.message).toContain('"Sign in with Acme Login"');
    expect(signInPolicyRefusal(acmeOnly, { signInMethod: 'sso', ssoProvider: 'other' }, true)?.code).toBe(
      'sso_required_by_organisation',
    );
    expect(signInPolicyRefusal(acmeOnly, { signInMethod: 'sso', ssoProvider: 'acme' }, false)).toBeNull();
  });
});
