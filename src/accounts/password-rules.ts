import { invalidRequest, type GatewayError } from '../canonical/errors.js';

/** The rules the registration form states and the server enforces (docs/dashboard-api.md). */
export const PASSWORD_MIN_LENGTH = 10;
/** Long passphrases are welcome; the cap only stops megabyte "passwords" from making scrypt work for nothing. */
export const PASSWORD_MAX_LENGTH = 200;

export const PASSWORD_RULES_TEXT = `${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters, not your email address.`;

/** The first rule the password breaks, as a 400 naming `field`; null when it keeps them all. Never echoes the password. */
export function passwordRuleViolation(password: string, email: string, field = 'password'): GatewayError | null {
  const length = [...password].length;
  if (length < PASSWORD_MIN_LENGTH)
    return invalidRequest(`The password must have at least ${PASSWORD_MIN_LENGTH} characters.`, field);
  if (length > PASSWORD_MAX_LENGTH)
    return invalidRequest(`The password must have at most ${PASSWORD_MAX_LENGTH} characters.`, field);
  if (password.trim().toLowerCase() === email.trim().toLowerCase())
    return invalidRequest('The password must not be your email address.', field);
  return null;
}
