import { describe, expect, it } from 'vitest';
import { canonicalRequest } from '../../../test/helpers/anthropic-test-fixtures.js';
import { buildOpenAIRequest } from './openai-build-request.js';

const build = (overrides: Parameters<typeof canonicalRequest>[0], model = 'gpt-5.4') =>
  buildOpenAIRequest(canonicalRequest(overrides), model);

describe('buildOpenAIRequest: fields OpenAI honours', () => {
  it('sends n, logprobs and top_logprobs from any client protocol', () => {
    const { body, droppedParameters } = build({
      choices: { count: 3, param: 'generationConfig.candidateCount' },
      logprobs: { topCandidates: 2, param: 'generationConfig.responseLogprobs' },
      extensionsProtocol: 'gemini-generate',
    });
    expect(body).toMatchObject({ n: 3, logprobs: true, top_logprobs: 2 });
    expect(droppedParameters).toEqual([]);
    expect(build({ logprobs: { topCandidates: 0, param: 'logprobs' } }).body).not.toHaveProperty('top_logprobs');
  });

  it('keeps safety_identifier beside user', () => {
    expect(build({ user: 'u-1', safetyIdentifier: 'hash-1' }).body).toMatchObject({
      user: 'u-1',
      safety_identifier: 'hash-1',
    });
  });

  it('reasoning turned off is the lowest effort: none on GPT-5, low on o-series (which always reason)', () => {
    expect(build({ reasoning: { enabled: false } }).body.reasoning_effort).toBe('none');
    expect(build({ reasoning: { enabled: false } }, 'o3').body.reasoning_effort).toBe('low');
    expect(build({ reasoning: { enabled: false } }).droppedParameters).toEqual([]);
    expect(build({}).body).not.toHaveProperty('reasoning_effort');
  });
});
