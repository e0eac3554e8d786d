import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from '@simplewebauthn/browser';
import { api } from './client';
import type { Account } from './types';

/** The signed-in person's address: verified or not, whether keys wait for it, whether the gateway sends mail. */
export interface EmailState {
  email: string;
  emailVerified: boolean;
  verificationRequired: boolean;
  mailConfigured: boolean;
}

export interface SessionRow {
  id: string;
  device: string;
  userAgent: string | null;
  ip: string | null;
  createdAt: number;
  lastSeenAt: number;
  current: boolean;
}

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

/**
 * Verified email, password reset, email change, sessions and deletion (docs/dashboard-api.md); second factors,
 * passkeys and single sign-on (docs/sign-in.md).
 */
export const identity = {
  state: () => api<EmailState>('GET', '/api/account/identity'),
  forgotPassword: (email: string, next?: string) =>
    api<{ message: string }>('POST', '/api/auth/forgot-password', next === undefined ? { email } : { email, next }),
  // With a second factor set up, the reset ends in the second step (as a password sign-in does).
  resetPassword: (token: string, newPassword: string) =>
    api<PasswordSignIn>('POST', '/api/auth/reset-password', { token, newPassword }),
  verifyEmail: (token: string) =>
    api<{ email: string; emailVerified: true }>('POST', '/api/auth/verify-email', { token }),
  resendVerification: () => api<{ message: string }>('POST', '/api/auth/resend-verification'),
  changeEmail: (newEmail: string, password: string) =>
    api<{ message: string }>('POST', '/api/account/email', { newEmail, password }),
  sessions: () => api<{ sessions: SessionRow[] }>('GET', '/api/account/sessions'),
  endSession: (id: string) => api<{ ended: number }>('POST', `/api/account/sessions/${encodeURIComponent(id)}/end`),
  endOtherSessions: () => api<{ ended: number }>('POST', '/api/account/sessions/end-others'),
  deleteAccount: (password: string) =>
    api<{ deleted: true; csrfToken: string }>('POST', '/api/account/delete', { password }),
  operatorVerify: (accountId: string) =>
    api<{ emailVerified: true }>('POST', `/api/admin/accounts/${encodeURIComponent(accountId)}/verify-email`),
  operatorResetLink: (accountId: string) =>
    api<{ path: string; url: string | null; expiresAt: number }>(
      'POST',
      `/api/admin/accounts/${encodeURIComponent(accountId)}/reset-link`,
    ),
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

/** A return path from a link's `?next=`: a path of this app only, never another site. */
export function safeNext(next: string | null): string {
  if (next === null || !next.startsWith('/') || next.startsWith('//') || next.includes('\\')) return '/';
  return next;
}

/** The SSO start URL, coming back to `returnTo` (a path of this app). */
export function ssoStartUrl(providerId: string, returnTo: string): string {
  return `/api/auth/sso/${encodeURIComponent(providerId)}/start?returnTo=${encodeURIComponent(returnTo)}`;
}
