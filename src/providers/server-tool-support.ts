import { invalidRequest } from '../canonical/errors.js';
import type { CanonicalMessage, CanonicalRequest, ContentBlock, VendorName } from '../canonical/request.js';
import type { ServerToolDefinition, ServerToolKind } from '../canonical/server-tools.js';
import { FAMILY_VENDOR, type ModelFamily } from '../catalog/models.js';
import { searchModelConflict } from './openai/openai-web-search.js';
import { serverToolResultAsText } from './server-tool-history.js';

/**
 * Which vendor-run tools each vendor has an equivalent of: Anthropic runs all of its own; Gemini runs a web search
 * (Google Search grounding), and so does OpenAI, on the Chat Completions search model the catalog names for each beta
 * model; DeepSeek runs none.
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

export interface VendorRequest {
  request: CanonicalRequest;
  /** Server tools left out (by the name the client protocol reports them under). */
  droppedParameters: string[];
}

/**
 * The request as the model's vendor can take it, or a 400 before anything is held or sent: every server tool must
 * have an equivalent there (or be one its client protocol lets go unoffered); server-tool blocks of earlier replies
 * go back intact to Anthropic and, elsewhere, as the text of the pages a search found
 * (docs/protocols/translation-policies.md).
 */
export function requestForVendor(request: CanonicalRequest, vendor: VendorName, family: ModelFamily): VendorRequest {
  const droppedParameters: string[] = [];
  const serverTools = (request.serverTools ?? []).filter((tool) => {
    if (VENDOR_SERVER_TOOLS[vendor].has(tool.kind) && !unofferedBeside(request, vendor, tool)) return true;
    if (tool.droppedAs !== undefined) {
      droppedParameters.push(tool.droppedAs);
      return false;
    }
    const families = familiesOffering(tool.kind);
    throw invalidRequest(
      `The tool '${tool.label}' in '${tool.param}' is not available on ${family} models; it is offered by the ${listWords(families)} ${families.length === 1 ? 'family' : 'families'}.`,
      tool.param,
    );
  });
  let withTools = request;
  if (droppedParameters.length > 0) {
    const { serverTools: _all, ...rest } = request;
    withTools = serverTools.length > 0 ? { ...rest, serverTools } : rest;
  }
  return { request: withServerHistory(withTools, vendor), droppedParameters };
}

/**
 * A tool the vendor runs, but not beside what the request also needs, left unoffered where the client protocol lets
 * it go (a Responses client: Codex offers `web_search` beside its function tools, which OpenAI's search model cannot
 * take). Elsewhere the vendor's adapter refuses the combination, naming both fields.
 */
function unofferedBeside(request: CanonicalRequest, vendor: VendorName, tool: ServerToolDefinition): boolean {
  if (tool.droppedAs === undefined) return false;
  return vendor === 'openai' && tool.kind === 'web-search' && searchModelConflict(request) !== undefined;
}

function withServerHistory(request: CanonicalRequest, vendor: VendorName): CanonicalRequest {
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
