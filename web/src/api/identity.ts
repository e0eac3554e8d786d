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

/** Verified email, password reset, email change, sessions and deletion (docs/dashboard-api.md). */
export const identity = {
  state: () => api<EmailState>('GET', '/api/account/identity'),
  forgotPassword: (email: string, next?: string) =>
    api<{ message: string }>('POST', '/api/auth/forgot-password', next === undefined ? { email } : { email, next }),
  resetPassword: (token: string, newPassword: string) =>
    api<{ account: Account; csrfToken: string }>('POST', '/api/auth/reset-password', { token, newPassword }),
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
};

/** A return path from a link's `?next=`: a path of this app only, never another site. */
export function safeNext(next: string | null): string {
  if (next === null || !next.startsWith('/') || next.startsWith('//') || next.includes('\\')) return '/';
  return next;
}
