import { invalidRequest } from '../canonical/errors.js';
import type { CanonicalMessage, CanonicalRequest, ContentBlock, VendorName } from '../canonical/request.js';
import type { ServerToolKind } from '../canonical/server-tools.js';
import { FAMILY_VENDOR, type ModelFamily } from '../catalog/models.js';
import { serverToolResultAsText } from './server-tool-history.js';

/**
 * Which vendor-run tools each vendor has an equivalent of: Anthropic runs all of its own; OpenAI (web search tool)
 * and Gemini (Google Search grounding) run a web search; DeepSeek runs none.
 */
const VENDOR_SERVER_TOOLS: Readonly<Record<VendorName, ReadonlySet<ServerToolKind>>> = {
  anthropic: new Set(['web-search', 'web-fetch', 'anthropic-only']),
  openai: new Set(['web-search']),
  gemini: new Set(['web-search']),
  deepseek: new Set(),
};

/** The families whose vendor has an equivalent of `kind`, for a refusal that says where the tool can be used. */
export function familiesOffering(kind: ServerToolKind): ModelFamily[] {
  return (Object.keys(FAMILY_VENDOR) as ModelFamily[]).filter((family) =>
    VENDOR_SERVER_TOOLS[FAMILY_VENDOR[family]].has(kind),
  );
}

/**
 * The request as the model's vendor can take it, or a 400 before anything is held or sent: every server tool must
 * have an equivalent there; server-tool blocks of earlier replies go back intact to Anthropic and, elsewhere, as
 * the text of the pages a search found (docs/protocols/translation-policies.md).
 */
export function requestForVendor(request: CanonicalRequest, vendor: VendorName, family: ModelFamily): CanonicalRequest {
  for (const tool of request.serverTools ?? []) {
    if (VENDOR_SERVER_TOOLS[vendor].has(tool.kind)) continue;
    const families = familiesOffering(tool.kind);
    throw invalidRequest(
      `The tool '${tool.label}' in '${tool.param}' is not available on ${family} models; it is offered by the ${listWords(families)} ${families.length === 1 ? 'family' : 'families'}.`,
      tool.param,
    );
  }
  if (vendor === 'anthropic' || !request.messages.some(hasServerBlock)) return request;
  const messages = request.messages.map((message, index): CanonicalMessage => {
    if (!hasServerBlock(message)) return message;
    const content = message.content.flatMap((block, blockIndex): ContentBlock[] => {
      if (block.type === 'server-tool-call') return [];
      if (block.type === 'server-tool-result')
        return [serverToolResultAsText(block, `messages[${index}].content[${blockIndex}]`)];
      return [block];
    });
    return { ...message, content };
  });
  return { ...request, messages };
}

function hasServerBlock(message: CanonicalMessage): boolean {
  return message.content.some((block) => block.type === 'server-tool-call' || block.type === 'server-tool-result');
}

/** `alpha, beta and gamma`. */
function listWords(words: readonly string[]): string {
  return words.length <= 1 ? words.join('') : `${words.slice(0, -1).join(', ')} and ${words.at(-1)}`;
}
