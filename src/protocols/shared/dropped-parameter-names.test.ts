import { describe, expect, it } from 'vitest';
import { droppedParametersAsClientNames } from './dropped-parameter-names.js';

describe('droppedParametersAsClientNames', () => {
  it("names each field as the client's protocol spells it, once, keeping names it already spells its own way", () => {
    expect(droppedParametersAsClientNames('openai-chat', ['thinking', 'top_k', 'logit_bias'])).toEqual([
      'reasoning_effort',
      'top_k',
      'logit_bias',
    ]);
    expect(droppedParametersAsClientNames('anthropic-messages', ['stop', 'reasoning_effort', 'top_k'])).toEqual([
      'stop_sequences',
      'output_config.effort',
      'top_k',
    ]);
    expect(
      droppedParametersAsClientNames('openai-responses', ['tools.web_search', 'thinking', 'reasoning_effort']),
    ).toEqual(['tools.web_search', 'reasoning.effort']);
    expect(droppedParametersAsClientNames('gemini-generate', ['top_k', 'seed', 'safetySettings'])).toEqual([
      'generationConfig.topK',
      'generationConfig.seed',
      'safetySettings',
    ]);
  });
});
