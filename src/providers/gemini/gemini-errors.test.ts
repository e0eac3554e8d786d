import { describe, expect, it } from 'vitest';
import { geminiUpstreamError, parseGeminiErrorBody, parseRetryDelay } from './gemini-errors.js';

describe('Gemini error bodies', () => {
  it('429 RESOURCE_EXHAUSTED with RetryInfo → rate limited, retry-after from retryDelay', () => {
    const body = JSON.stringify({
      error: {
        code: 429,
        message: 'You exceeded your current quota.',
        status: 'RESOURCE_EXHAUSTED',
        details: [
          { '@type': 'type.googleapis.com/google.rpc.QuotaFailure', violations: [] },
          { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '7s' },
        ],
      },
    });
    const error = geminiUpstreamError(parseGeminiErrorBody(body), 429, 'Gemini', '99');
    expect(error).toMatchObject({
      code: 'upstream_rate_limited',
      status: 429,
      retryAfterSeconds: 7,
      upstreamCode: 'RESOURCE_EXHAUSTED',
    });
    expect(error.message).toBe('Gemini returned HTTP 429: You exceeded your current quota.');
  });

  it('falls back to the retry-after header when there is no RetryInfo', () => {
    expect(geminiUpstreamError(undefined, 503, 'Gemini', '12')).toMatchObject({
      code: 'upstream_unavailable',
      retryAfterSeconds: 12,
    });
  });

  it('a refused gateway key (400 API_KEY_INVALID) is the operator’s credential failing, not the client’s request', () => {
    const body = JSON.stringify({
      error: {
        code: 400,
        message: 'API key not valid. Please pass a valid API key.',
        status: 'INVALID_ARGUMENT',
        details: [
          { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com' },
        ],
      },
    });
    const error = geminiUpstreamError(parseGeminiErrorBody(body), 400, 'Gemini');
    expect(error.code).toBe('upstream_auth_failed');
    expect(error.message).toContain('not a problem with your API key');
  });

  it('maps other statuses through the shared table and keeps the vendor message', () => {
    const invalid = geminiUpstreamError(
      parseGeminiErrorBody(
        '{"error":{"code":400,"message":"Function call is missing a thought_signature in functionCall parts.","status":"INVALID_ARGUMENT"}}',
      ),
      400,
      'Gemini',
    );
    expect(invalid).toMatchObject({ code: 'upstream_invalid_request', upstreamCode: 'INVALID_ARGUMENT' });
    expect(invalid.message).toContain('missing a thought_signature');
    expect(geminiUpstreamError(undefined, 404, 'Gemini').code).toBe('upstream_not_found');
    expect(geminiUpstreamError(undefined, 500, 'Gemini').code).toBe('upstream_server_error');
    expect(geminiUpstreamError(undefined, 504, 'Gemini').code).toBe('upstream_timeout');
  });

  it('reads bodies wrapped in a JSON array and survives bodies that are not JSON', () => {
    expect(parseGeminiErrorBody('[{"error":{"code":500,"message":"Internal error","status":"INTERNAL"}}]')).toEqual({
      code: 500,
      message: 'Internal error',
      status: 'INTERNAL',
    });
    expect(parseGeminiErrorBody('<html>Bad Gateway</html>')).toBeUndefined();
    expect(parseGeminiErrorBody('{"candidates":[]}')).toBeUndefined();
  });

  it('parses protobuf durations, rounding up', () => {
    expect(parseRetryDelay('37s')).toBe(37);
    expect(parseRetryDelay('1.5s')).toBe(2);
    expect(parseRetryDelay('0.250s')).toBe(1);
    expect(parseRetryDelay('soon')).toBeUndefined();
    expect(parseRetryDelay(undefined)).toBeUndefined();
  });
});
