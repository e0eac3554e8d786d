import type { MailMessage } from './mailer.js';

/** The text of each mail the gateway sends. Plain text: links stay visible, and nothing is loaded remotely. */

export function verificationMail(to: string, link: string): MailMessage {
  return {
    to,
    subject: 'Confirm your email address for Tollgate',
    text: [
      'Confirm that this address is yours by opening this link within 48 hours:',
      '',
      link,
      '',
      'If you did not sign up or change your address on this gateway, ignore this mail: nothing changes.',
    ].join('\n'),
  };
}

export function resetMail(to: string, link: string): MailMessage {
  return {
    to,
    subject: 'Reset your Tollgate password',
    text: [
      'Someone asked to reset the password of the Tollgate account with this address.',
      'To choose a new password, open this link within an hour (it works once):',
      '',
      link,
      '',
      'If it was not you, ignore this mail: your password stays as it is.',
      'Resetting signs out every other session of the account.',
    ].join('\n'),
  };
}
