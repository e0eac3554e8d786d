import { describe, expect, it } from 'vitest';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH, passwordRuleViolation } from './password-rules.js';

describe('password rules', () => {
  it('takes 10 to 200 characters, counted as characters rather than UTF-16 units', () => {
    expect(passwordRuleViolation('x'.repeat(PASSWORD_MIN_LENGTH), 'a@example.com')).toBeNull();
    expect(passwordRuleViolation('x'.repeat(PASSWORD_MAX_LENGTH), 'a@example.com')).toBeNull();
    expect(passwordRuleViolation('x'.repeat(PASSWORD_MIN_LENGTH - 1), 'a@example.com')?.param).toBe('password');
    expect(passwordRuleViolation('x'.repeat(PASSWORD_MAX_LENGTH + 1), 'a@example.com')?.message).toMatch(/at most 200/);
    // Five emoji are ten UTF-16 units but five characters: too short.
    expect(passwordRuleViolation('🔑'.repeat(5), 'a@example.com')).not.toBeNull();
  });

  it('refuses the email address itself, whatever its case, and names the field asked for', () => {
    const violation = passwordRuleViolation(' LONG.NAME@Example.com ', 'long.name@example.com', 'newPassword');
    expect(violation?.param).toBe('newPassword');
    expect(violation?.message).toMatch(/email/);
  });

  it('never repeats the password in its message', () => {
    const password = 'secret-1';
    expect(passwordRuleViolation(password, 'a@example.com')?.message).not.toContain(password);
  });
});
