import { countTokens } from 'gpt-tokenizer';
import type { CanonicalResponse } from './accumulate.js';
import type { CanonicalRequest, ContentBlock } from './request.js';

/**
 * Token estimates with a real tokenizer (o200k, bundled with gpt-tokenizer, works offline). Used where a vendor
 * gives no count: admission estimates and replies cut off before the vendor's usage arrived. Counts of other
 * vendors' tokenizers differ somewhat; these are estimates, the vendor's own usage wins whenever it exists.
 */

/** OpenAI's per-message framing overhead, the same rule the simulator counts with. */
const TOKENS_PER_MESSAGE = 3;
const TOKENS_PER_REPLY = 3;
/** A flat estimate for an image; vendors charge by size, which the gateway does not decode. */
const TOKENS_PER_IMAGE = 765;
/** A flat estimate for a document (a few pages); the vendor's count replaces it once the reply arrives. */
const TOKENS_PER_DOCUMENT = 1_500;

export function countTextTokens(text: string): number {
  return text === '' ? 0 : countTokens(text);
}

export function estimateRequestInputTokens(request: CanonicalRequest): number {
  let total = TOKENS_PER_REPLY;
  if (request.system.length > 0) {
    total += TOKENS_PER_MESSAGE + request.system.reduce((sum, block) => sum + countTextTokens(block.text), 0);
  }
  for (const message of request.messages) {
    total += TOKENS_PER_MESSAGE;
    for (const block of message.content) total += blockTokens(block);
  }
  for (const tool of request.tools ?? []) {
    total += countTextTokens(tool.name) + countTextTokens(tool.description ?? '') + countTextTokens(JSON.stringify(tool.parameters ?? {}));
  }
  return total;
}

/** Output tokens of what a (possibly partial) reply delivered. */
export function estimateResponseOutputTokens(response: CanonicalResponse): number {
  let total = 0;
  for (const block of response.content) {
    if (block.type === 'tool-call') total += countTextTokens(block.name) + countTextTokens(block.argumentsJson);
    else total += countTextTokens(block.text);
  }
  return total;
}

function blockTokens(block: ContentBlock): number {
  switch (block.type) {
    case 'text':
    case 'reasoning':
      return countTextTokens(block.text);
    case 'image':
      return TOKENS_PER_IMAGE;
    case 'document':
      return TOKENS_PER_DOCUMENT;
    case 'tool-call':
      return countTextTokens(block.name) + countTextTokens(block.argumentsJson);
    case 'tool-result':
      return block.content.reduce((sum, part) => sum + blockTokens(part), 0);
  }
}
