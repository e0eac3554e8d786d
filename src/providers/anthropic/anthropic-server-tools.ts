import { invalidRequest } from '../../canonical/errors.js';
import { DEFAULT_WEB_SEARCH_MAX_USES, type ServerToolDefinition } from '../../canonical/server-tools.js';
import type { AnthropicServerTool } from '../../wire/anthropic-messages-wire.js';

/** The web search version sent for another family's search tool: the oldest, so every Claude model takes it. */
const WEB_SEARCH_TYPE = 'web_search_20250305';

/**
 * A server tool as Anthropic takes it: an Anthropic client's object as sent (a copy: the gateway may place a cache
 * breakpoint on it), or Anthropic's web search built from another client's (what has no equivalent is reported in
 * `dropped`). A web search gets the gateway's
 * default `max_uses` when the caller set none, so the hold covers every search (docs/billing.md).
 */
export function buildAnthropicServerTool(tool: ServerToolDefinition, dropped: string[]): AnthropicServerTool {
  if (tool.anthropicTool !== undefined) {
    const built: AnthropicServerTool = { ...tool.anthropicTool };
    if (tool.kind === 'web-search' && (built.max_uses === undefined || built.max_uses === null))
      built.max_uses = DEFAULT_WEB_SEARCH_MAX_USES;
    return built;
  }
  if (tool.kind !== 'web-search')
    throw invalidRequest(`The tool '${tool.label}' in '${tool.param}' has no equivalent on this model.`, tool.param);
  const options = tool.webSearch ?? {};
  const built: AnthropicServerTool = {
    type: WEB_SEARCH_TYPE,
    name: 'web_search',
    max_uses: options.maxUses ?? DEFAULT_WEB_SEARCH_MAX_USES,
  };
  if (options.allowedDomains !== undefined) built.allowed_domains = options.allowedDomains;
  if (options.blockedDomains !== undefined) built.blocked_domains = options.blockedDomains;
  if (options.userLocation !== undefined) built.user_location = { type: 'approximate', ...options.userLocation };
  // How much page text feeds the model is Anthropic's to decide: OpenAI's hint only tunes it.
  if (options.contextSize !== undefined) dropped.push(`${tool.param}.search_context_size`);
  return built;
}
