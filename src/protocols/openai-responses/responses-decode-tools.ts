import type { z } from 'zod';
import { GatewayError, invalidRequest } from '../../canonical/errors.js';
import type { CanonicalRequest, ToolChoice, ToolDefinition } from '../../canonical/request.js';
import type { ServerToolDefinition, UserLocation, WebSearchOptions } from '../../canonical/server-tools.js';
import { validationError } from '../shared/format-validation-error.js';
import type { ParsedResponsesRequest } from './responses-decode-request.js';
import { customTool, functionTool, namespaceTool, WEB_SEARCH_TOOL_TYPES, webSearchTool } from './responses-schema.js';

/**
 * Tools. The rule: tools the client executes itself are what every family runs: `function` tools as they are, and
 * `custom` tools (free-text input, Codex's freeform `apply_patch`) as a function with one string argument `input`,
 * their grammar in the description, their calls handed back as `custom_tool_call` items. A `namespace` of such
 * tools (Codex's sub-agent tools) is flattened: each inner tool becomes `<namespace>__<name>` with the namespace's
 * description before its own, and its calls come back as `{ namespace, name }`. `web_search` is run by a family
 * that has a web search and otherwise treated like the rest: any other tool type (`file_search`, `code_interpreter`, `image_generation`, `computer_use_preview`, `mcp`,
 * `local_shell`, `shell`, `apply_patch`, …) is dropped and reported in `x-tollgate-dropped-params` as `tools.<type>`:
 * a model not offered a tool answers without it, in the item types the client already knows, so the reply's
 * contract holds. A `tool_choice` that forces such a tool cannot be honoured: 400.
 */
export interface DecodedTools {
  tools: ToolDefinition[];
  /** Every name a vendor sees (namespaced tools by their flat name). */
  toolNames: Set<string>;
  /** Flat names of the `custom` tools: their calls come back as `custom_tool_call` items. */
  customTools: Set<string>;
  /** Flat names of namespaced tools, with the namespace and name the client calls them by. */
  namespacedTools: Map<string, NamespacedToolName>;
  /** Hosted tools a family other than OpenAI's can run (web search). */
  serverTools: ServerToolDefinition[];
}

export interface NamespacedToolName {
  namespace: string;
  name: string;
}

/** How a namespaced tool is named to the vendors: one name of the characters every vendor accepts. */
export function flatToolName(namespace: string, name: string): string {
  return `${namespace}__${name}`;
}

export function decodeTools(input: ParsedResponsesRequest, dropped: string[]): DecodedTools {
  const decoded: DecodedTools = {
    tools: [],
    toolNames: new Set(),
    customTools: new Set(),
    namespacedTools: new Map(),
    serverTools: [],
  };
  for (const [index, tool] of (input.tools ?? []).entries()) {
    if (tool.type === 'namespace') {
      const parsed = namespaceTool.safeParse(tool, { reportInput: true });
      if (!parsed.success) throw nestedValidationError(parsed.error, `tools[${index}]`);
      const namespace = parsed.data;
      for (const [innerIndex, inner] of namespace.tools.entries()) {
        const param = `tools[${index}].tools[${innerIndex}]`;
        if (inner.type !== 'function' && inner.type !== 'custom') {
          throw new GatewayError(
            'unsupported_parameter',
            `'${param}.type': a namespace may hold function and custom tools only.`,
            { param: `${param}.type` },
          );
        }
        const definition = decodeTool(inner, param);
        const flat = flatToolName(namespace.name, definition.name);
        if (flat.length > 64)
          throw invalidRequest(
            `'${param}.name': with its namespace '${flat}' is longer than the 64 characters vendors accept.`,
            `${param}.name`,
          );
        const description = [namespace.description, definition.description]
          .filter((text) => text != null && text !== '')
          .join('\n\n');
        add(
          decoded,
          { ...definition, name: flat, ...(description === '' ? {} : { description }) },
          inner.type === 'custom',
          `${param}.name`,
        );
        decoded.namespacedTools.set(flat, { namespace: namespace.name, name: definition.name });
      }
      continue;
    }
    if (WEB_SEARCH_TOOL_TYPES.has(tool.type)) {
      decoded.serverTools.push(decodeWebSearchTool(tool, `tools[${index}]`));
      continue;
    }
    if (tool.type !== 'function' && tool.type !== 'custom') {
      dropped.push(headerSafeName(`tools.${tool.type}`));
      continue;
    }
    add(decoded, decodeTool(tool, `tools[${index}]`), tool.type === 'custom', `tools[${index}].name`);
  }
  return decoded;
}

/**
 * A web search: run by a family that has one (alpha as Anthropic's, gamma as Google Search grounding); elsewhere
 * dropped and reported like any hosted tool, the rule of this protocol.
 */
function decodeWebSearchTool(tool: { type: string }, param: string): ServerToolDefinition {
  const parsed = webSearchTool.safeParse(tool, { reportInput: true });
  if (!parsed.success) throw nestedValidationError(parsed.error, param);
  const { filters, search_context_size: contextSize, user_location: location } = parsed.data;
  const webSearch: WebSearchOptions = {};
  if (filters?.allowed_domains) webSearch.allowedDomains = filters.allowed_domains;
  if (contextSize !== undefined) webSearch.contextSize = contextSize;
  if (location) {
    const userLocation: UserLocation = {};
    for (const field of ['city', 'country', 'region', 'timezone'] as const) {
      const value = location[field];
      if (typeof value === 'string') userLocation[field] = value;
    }
    webSearch.userLocation = userLocation;
  }
  return { kind: 'web-search', label: tool.type, param, webSearch, droppedAs: headerSafeName(`tools.${tool.type}`) };
}

/** A function or custom tool as the definition every vendor runs. */
function decodeTool(tool: { type: string }, param: string): ToolDefinition {
  if (tool.type === 'custom') {
    const parsed = customTool.safeParse(tool, { reportInput: true });
    if (!parsed.success) throw nestedValidationError(parsed.error, param);
    return customToolDefinition(parsed.data);
  }
  const parsed = functionTool.safeParse(tool, { reportInput: true });
  if (!parsed.success) throw nestedValidationError(parsed.error, param);
  const fn = parsed.data;
  const definition: ToolDefinition = { name: fn.name };
  if (fn.description != null) definition.description = fn.description;
  if (fn.parameters != null) definition.parameters = fn.parameters;
  if (fn.strict != null) definition.strict = fn.strict;
  return definition;
}

function add(decoded: DecodedTools, definition: ToolDefinition, custom: boolean, param: string): void {
  if (decoded.toolNames.has(definition.name)) {
    throw invalidRequest(
      `'${param}': two tools are named '${definition.name}' (a namespaced tool is named <namespace>__<name>).`,
      param,
    );
  }
  decoded.tools.push(definition);
  decoded.toolNames.add(definition.name);
  if (custom) decoded.customTools.add(definition.name);
}

/** A custom tool as a function every vendor runs: its whole input is the string argument `input`. */
function customToolDefinition(tool: z.output<typeof customTool>): ToolDefinition {
  const format = tool.format;
  const grammar =
    format?.type === 'grammar'
      ? `\n\nThe input must follow this ${(format as { syntax: string }).syntax} grammar:\n${(format as { definition: string }).definition}`
      : '';
  return {
    name: tool.name,
    description: `${tool.description ?? ''}${grammar}`.trim() || `The ${tool.name} tool.`,
    parameters: {
      type: 'object',
      properties: {
        input: { type: 'string', description: `The raw input of the ${tool.name} tool, exactly as the tool reads it.` },
      },
      required: ['input'],
      additionalProperties: false,
    },
  };
}

export function decodeToolChoice(
  choice: ParsedResponsesRequest['tool_choice'],
  toolNames: Set<string>,
  request: CanonicalRequest,
): ToolChoice | undefined {
  if (choice == null) return undefined;
  if (typeof choice === 'string') return { type: choice };
  if (choice.type === 'function' || choice.type === 'custom') {
    const { name: given, namespace } = choice as { name?: unknown; namespace?: unknown };
    const name = typeof namespace === 'string' && typeof given === 'string' ? flatToolName(namespace, given) : given;
    if (typeof name !== 'string' || !toolNames.has(name)) {
      throw invalidRequest(
        `'tool_choice.name' names ${JSON.stringify(name)}, which is not a ${choice.type} tool of this request.`,
        'tool_choice.name',
      );
    }
    return { type: 'tool', name };
  }
  if (choice.type === 'allowed_tools') {
    // Honoured exactly: the model is offered only the allowed function tools.
    const record = choice as { mode?: unknown; tools?: unknown };
    const allowed = Array.isArray(record.tools) ? record.tools : [];
    const names = new Set<string>();
    for (const [index, tool] of allowed.entries()) {
      const entry = tool as { type?: unknown; name?: unknown; namespace?: unknown } | null;
      if ((entry?.type !== 'function' && entry?.type !== 'custom') || typeof entry.name !== 'string') {
        throw new GatewayError(
          'unsupported_parameter',
          `'tool_choice.tools[${index}]': only function and custom tools can be allowed on this gateway.`,
          { param: `tool_choice.tools[${index}]` },
        );
      }
      names.add(typeof entry.namespace === 'string' ? flatToolName(entry.namespace, entry.name) : entry.name);
    }
    request.tools = (request.tools ?? []).filter((tool) => names.has(tool.name));
    if (request.tools.length === 0) delete request.tools;
    if (record.mode === 'required') return { type: 'required' };
    if (record.mode === 'auto' || record.mode === undefined) return { type: 'auto' };
    throw invalidRequest('\'tool_choice.mode\' must be "auto" or "required".', 'tool_choice.mode');
  }
  throw new GatewayError(
    'unsupported_parameter',
    `'tool_choice' forces a '${choice.type}' tool, which no model of this gateway runs: only function and custom tools can be forced.`,
    { param: 'tool_choice' },
  );
}

/**
 * A name the client chose, fit for the `x-tollgate-dropped-params` header: plain names as they are, anything else
 * (control characters, commas, non-ASCII) percent-encoded, and bounded so a hostile name cannot bloat the header.
 */
export function headerSafeName(name: string): string {
  const safe = /^[A-Za-z0-9_.\-[\]]+$/.test(name) ? name : encodeURIComponent(name);
  return safe.length > 100 ? `${safe.slice(0, 100)}...` : safe;
}

/** A schema error inside a part of the body, named by its full path (`input[2].content[0].text`). */
export function nestedValidationError(error: Parameters<typeof validationError>[0], prefix: string): GatewayError {
  const relative = validationError(error);
  const inner = relative.param;
  const path = inner === undefined ? prefix : `${prefix}${inner.startsWith('[') ? '' : '.'}${inner}`;
  return invalidRequest(
    relative.message.replace(inner === undefined ? 'the request body' : `'${inner}'`, `'${path}'`),
    path,
  );
}
