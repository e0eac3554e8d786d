import { describe, expect, it } from 'vitest';
import { GatewayError } from '../canonical/errors.js';
import { patternToRegExp, protocolOfPath, renderPathError, RouteTable } from './unmatched-requests.js';

describe('protocolOfPath', () => {
  it.each([
    ['/v1/messages', 'anthropic'],
    ['/v1/messages/count_tokens', 'anthropic'],
    ['/v1/messagesx', 'openai'],
    ['/v1beta', 'google'],
    ['/v1beta/models/x:generateContent', 'google'],
    ['/v1/models/gamma-2.5-pro:generateContent', 'google'],
    ['/v1/models/gamma-2.5-pro', 'openai'],
    ['/api/keys', 'dashboard'],
    ['/apiary', 'openai'],
    ['/v1/chat/completions', 'openai'],
  ] as const)('%s → %s', (path, protocol) => {
    expect(protocolOfPath(path)).toBe(protocol);
  });

  it('renders the dashboard shape for /api', () => {
    expect(renderPathError(new GatewayError('not_found', 'x'), '/api/x').body).toEqual({ error: { code: 'not_found', message: 'x' } });
  });
});

describe('RouteTable', () => {
  it("matches find-my-way's patterns against concrete paths: params, regex params, literal colons, wildcards", () => {
    expect(patternToRegExp('/v1/keys/:id/rotate').test('/v1/keys/key_1/rotate')).toBe(true);
    expect(patternToRegExp('/v1/keys/:id/rotate').test('/v1/keys/a/b/rotate')).toBe(false);
    const generate = patternToRegExp('/v1beta/models/:model(^[^:]+)::generateContent');
    expect(generate.test('/v1beta/models/gamma-2.5-pro:generateContent')).toBe(true);
    expect(generate.test('/v1beta/models/gamma-2.5-pro:countTokens')).toBe(false);
    expect(patternToRegExp('/assets/*').test('/assets/a/b.js')).toBe(true);
    expect(patternToRegExp('/v1.0/x').test('/v1a0/x')).toBe(false);
  });

  it('lists the methods a path has routes for (HEAD with GET); the SPA catch-all counts for nothing', () => {
    const table = new RouteTable();
    table.add('POST', '/v1/messages');
    table.add(['GET', 'HEAD'], '/v1/models');
    table.add('GET', '/v1/models/:id');
    table.add('GET', '/*');
    expect(table.allowedMethods('/v1/messages')).toEqual(['POST']);
    expect(table.allowedMethods('/v1/models')).toEqual(['GET', 'HEAD']);
    expect(table.allowedMethods('/v1/models/x')).toEqual(['GET', 'HEAD']);
    expect(table.allowedMethods('/keys')).toEqual([]);
  });
});
