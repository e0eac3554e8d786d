import { invalidRequest } from '../canonical/errors.js';
import type { TextBlock } from '../canonical/request.js';
import type { ServerToolResultBlock } from '../canonical/server-tools.js';

/**
 * Server-tool blocks of an earlier reply, for a vendor that cannot take them back as such: the pages a web search
 * found are context the model may still need, so they go as text; the call itself was the vendor's, not the
 * model's to replay, and goes nowhere. Any other result (code execution, web fetch) has no meaning elsewhere.
 */
export function serverToolResultAsText(block: ServerToolResultBlock, param: string): TextBlock {
  if (block.searchResults === undefined) {
    throw invalidRequest(
      `'${param}' is a ${block.resultType} block, which only the alpha family can take back; remove it or use an alpha model.`,
      param,
    );
  }
  const lines = block.searchResults.map((result) => `- ${result.title} (${result.url})`);
  return { type: 'text', text: ['Web search results:', ...lines].join('\n') };
}
