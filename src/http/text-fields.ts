import { z } from 'zod';

/**
 * No control characters (U+0000–U+001F, U+007F–U+009F): a key name or an email is shown on one line and stored
 * as text, and PostgreSQL cannot store U+0000 at all. Refused with a 400 naming the field, on every backend.
 */
const NO_CONTROL_CHARACTERS = /^[^\p{Cc}]*$/u;
const NO_CONTROL_CHARACTERS_MESSAGE = 'must not contain control characters (such as U+0000)';

export function withoutControlCharacters(schema: z.ZodString): z.ZodString {
  return schema.regex(NO_CONTROL_CHARACTERS, { message: NO_CONTROL_CHARACTERS_MESSAGE });
}

/** An API key's display name, the same rule on `/v1/keys` and the dashboard. */
export const keyNameSchema = withoutControlCharacters(
  z.string().trim().min(1, 'Give the key a name.').max(100, 'Key names are at most 100 characters.'),
);
