import { describe, expect, it } from 'vitest';
import { GatewayError } from '../canonical/errors.js';
import { pathOf, patternToRegExp, protocolOfPath, renderPathError, RouteTable } from './unmatched-requests.js';

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

  it("answers a Google SDK in Google's shape on the model routes it calls under /v1, and nowhere else", () => {
    expect(protocolOfPath('/v1/models', true)).toBe('google');
    expect(protocolOfPath('/v1/models/%ZZ', true)).toBe('google');
    expect(protocolOfPath('/v1/models/a/b', true)).toBe('openai');
    expect(protocolOfPath('/v1/keys/x', true)).toBe('openai');
    expect(protocolOfPath('/v1/messages', true)).toBe('anthropic');
    expect(protocolOfPath('/v1/models/%ZZ')).toBe('openai');
  });

  it('reads the path of origin-form and absolute-form targets, never the query', () => {
    expect(pathOf('/v1/keys/x?key=secret')).toBe('/v1/keys/x');
    expect(pathOf('http://gateway.example:8080/v1beta/models?key=secret')).toBe('/v1beta/models');
    expect(pathOf('https://gateway.example')).toBe('/');
    expect(pathOf(undefined)).toBe('/');
  });

  it('renders the dashboard shape for /api', () => {
    expect(renderPathError(new GatewayError('not_found', 'x'), '/api/x').body).toEqual({
      error: { code: 'not_found', message: 'x' },
    });
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
