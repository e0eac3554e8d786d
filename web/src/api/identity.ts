import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from '@simplewebauthn/browser';
import { api } from './client';
import type { Account } from './types';

/** Second factors, passkeys and single sign-on (docs/sign-in.md). */

export type SecondFactorMethod = 'totp' | 'recovery_code' | 'passkey';

export interface PendingSecondFactor {
  token: string;
  methods: SecondFactorMethod[];
  expiresAt: number;
}

/** A password sign-in: signed in, or a second step to take. */
export type PasswordSignIn =
  | { account: Account; csrfToken: string; secondFactor?: undefined }
  | { account: null; secondFactor: PendingSecondFactor };

export interface SecuritySettings {
  totp: { enabled: boolean; recoveryCodesLeft: number };
  passkeys: Array<{ id: string; name: string; createdAt: number; lastUsedAt: number | null }>;
}

type SignedIn = { account: Account; csrfToken: string };

export const identity = {
  login: (email: string, password: string) => api<PasswordSignIn>('POST', '/api/auth/login', { email, password }),
  secondFactor: (token: string, entry: { code: string } | { recoveryCode: string }) =>
    api<SignedIn>('POST', '/api/auth/second-factor', { token, ...entry }),
  passkeySignInOptions: (token?: string) =>
    api<{ passkeyToken: string; options: PublicKeyCredentialRequestOptionsJSON }>(
      'POST',
      '/api/auth/passkey/options',
      token === undefined ? {} : { token },
    ),
  passkeySignIn: (passkeyToken: string, response: AuthenticationResponseJSON, token?: string) =>
    api<SignedIn>(
      'POST',
      '/api/auth/passkey',
      token === undefined ? { passkeyToken, response } : { passkeyToken, response, token },
    ),
  ssoProviders: () => api<{ providers: Array<{ id: string; name: string }> }>('GET', '/api/auth/sso/providers'),
  security: () => api<SecuritySettings>('GET', '/api/security'),
  beginTotp: () => api<{ secret: string; uri: string; qrCodeDataUrl: string }>('POST', '/api/security/totp'),
  confirmTotp: (code: string) => api<{ recoveryCodes: string[] }>('POST', '/api/security/totp/confirm', { code }),
  disableTotp: (password: string, code: string) =>
    api<unknown>('POST', '/api/security/totp/disable', { password, code }),
  newRecoveryCodes: (code: string) =>
    api<{ recoveryCodes: string[] }>('POST', '/api/security/recovery-codes', { code }),
  passkeyRegistrationOptions: () =>
    api<{ token: string; options: PublicKeyCredentialCreationOptionsJSON }>('POST', '/api/security/passkeys/options'),
  registerPasskey: (token: string, response: RegistrationResponseJSON, name: string) =>
    api<unknown>('POST', '/api/security/passkeys', { token, response, name }),
  renamePasskey: (id: string, name: string) =>
    api<unknown>('PATCH', `/api/security/passkeys/${encodeURIComponent(id)}`, { name }),
  removePasskey: (id: string) => api<unknown>('DELETE', `/api/security/passkeys/${encodeURIComponent(id)}`),
};

/** The SSO start URL, coming back to `returnTo` (a path of this app). */
export function ssoStartUrl(providerId: string, returnTo: string): string {
  return `/api/auth/sso/${encodeURIComponent(providerId)}/start?returnTo=${encodeURIComponent(returnTo)}`;
}
