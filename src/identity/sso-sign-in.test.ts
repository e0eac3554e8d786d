import { describe, expect, it } from 'vitest';
import { isInternalPath } from './sso-sign-in.js';

describe('isInternalPath', () => {
  it.each(['/', '/keys', '/usage?key=k_1&days=7', '/settings#passkeys'])('accepts the gateway path %s', (path) => {
    expect(isInternalPath(path)).toBe(true);
  });

  it.each([
    'https://evil.example/',
    '//evil.example/',
    '/\\evil.example',
    '\\\\evil.example',
    'javascript:alert(1)',
    'keys',
    '',
    '/\tevil',
    `/${'a'.repeat(600)}`,
  ])('refuses %j', (path) => {
    expect(isInternalPath(path)).toBe(false);
  });
});
