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

export function invitationMail(
  to: string,
  link: string,
  invitation: { organisationName: string; invitedByEmail: string; role: string },
): MailMessage {
  return {
    to,
    subject: `You are invited to ${invitation.organisationName} on Tollgate`,
    text: [
      `${invitation.invitedByEmail} invites you to join the organisation "${invitation.organisationName}" on Tollgate as ${invitation.role}.`,
      'To accept, open this link within 7 days (it works once) and sign in, or create an account with this address:',
      '',
      link,
      '',
      'If you do not want to join, ignore this mail: nothing changes.',
    ].join('\n'),
  };
}
