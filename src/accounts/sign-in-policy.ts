import type { OrganisationSignInPolicy } from '../storage/organisation-types.js';
import type { SessionRecord } from '../storage/session-types.js';

/** Why a session may not reach an organisation, as the dashboard tells the person. */
export interface SignInPolicyRefusal {
  code: 'sso_required_by_organisation' | 'second_factor_enrolment_required' | 'second_factor_session_required';
  message: string;
}

/**
 * Whether an organisation's sign-in policy lets this session in. Decided on every request from what the session
 * row says of its start and whether the person has a second factor now, so a policy switched on applies to
 * sessions already open, on every instance, from their next request.
 *
 * - Required SSO: only a session started through one of the named providers.
 * - Required second factor: the person has one set up (authenticator app or passkey), and the session did not
 *   start with a password alone (a second step, a passkey, or single sign-on, whose provider runs its own).
 */
export function signInPolicyRefusal(
  policy: OrganisationSignInPolicy,
  session: Pick<SessionRecord, 'signInMethod' | 'ssoProvider'>,
  hasSecondFactor: boolean,
  providerName: (id: string) => string = (id) => id,
): SignInPolicyRefusal | null {
  const method = session.signInMethod ?? 'password';
  if (policy.requiredSsoProviders.length > 0) {
    const ssoProvider = session.ssoProvider ?? null;
    if (method !== 'sso' || ssoProvider === null || !policy.requiredSsoProviders.includes(ssoProvider)) {
      const names = policy.requiredSsoProviders.map((id) => `"Sign in with ${providerName(id)}"`).join(' or ');
      return {
        code: 'sso_required_by_organisation',
        message: `This organisation is reached only through single sign-on: sign out, then use ${names}.`,
      };
    }
  }
  if (!policy.requireSecondFactor) return null;
  if (!hasSecondFactor) {
    return {
      code: 'second_factor_enrolment_required',
      message:
        'This organisation requires two-step sign-in: set up an authenticator app or a passkey in Settings → Security, then come back.',
    };
  }
  if (method === 'password') {
    return {
      code: 'second_factor_session_required',
      message:
        'This organisation requires two-step sign-in, and this session was started with a password alone: sign out and sign in again with your second factor.',
    };
  }
  return null;
}
