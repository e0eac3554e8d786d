/**
 * A refusal of the identity services, with the HTTP status and code the dashboard API answers with
 * (docs/dashboard-api.md). The message is written for the person at the form.
 */
export class IdentityError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'IdentityError';
  }
}

export const mailNotConfigured = (what: string) =>
  new IdentityError(
    409,
    'mail_not_configured',
    `This gateway does not send mail, so ${what} by mail. Ask its operator: they can do it for you.`,
  );
