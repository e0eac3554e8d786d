import { invalidRequest } from '../../canonical/errors.js';
import type { CanonicalRequest } from '../../canonical/request.js';
import type { AnthropicTool, AnthropicToolChoice } from '../../wire/anthropic-messages-wire.js';

/**
 * `response_format` on Anthropic, which has no JSON mode of its own: the forced-tool technique
 * (docs/protocols/translation.md#structured-output). The reply is requested as the input of one extra tool, the model
 * is made to call a tool, and the mappers turn that tool's input back into the reply's text, so the client sees an
 * ordinary JSON text reply.
 */
export interface JsonModePlan {
  /** The extra tool; the mappers recognise its calls by this name. */
  tool: AnthropicTool;
  toolChoice: AnthropicToolChoice;
}

const DEFAULT_TOOL_NAME = 'json_response';

/**
 * The plan for a request, or undefined when no JSON reply is asked for. With the client's own tools available the
 * model may still call them: `any` lets it choose between a real call and the JSON reply. When the client forces a
 * tool call (`required` or a named tool) the turn is a call by contract and there is no reply text to format.
 */
export function planJsonMode(
  request: CanonicalRequest,
  clientTools: readonly AnthropicTool[],
): JsonModePlan | undefined {
  const format = request.responseFormat;
  if (format === undefined || format.type === 'text') return undefined;
  const choice = request.toolChoice?.type;
  if (choice === 'required' || choice === 'tool') return undefined;
  const taken = new Set(clientTools.map((tool) => tool.name));
  let name = format.type === 'json_schema' ? toolName(format.name) : DEFAULT_TOOL_NAME;
  while (taken.has(name)) name = `${name.slice(0, 59)}_json`;
  const tool: AnthropicTool =
    format.type === 'json_schema'
      ? {
          name,
          description:
            format.description ??
            'Give your complete reply as the input of this tool: a JSON object that follows its schema.',
          input_schema: objectSchema(format.schema, 'response_format.json_schema.schema'),
        }
      : {
          name,
          description: 'Give your complete reply as the input of this tool: a single JSON object.',
          input_schema: { type: 'object' },
        };
  if (format.type === 'json_schema' && format.strict === true) tool.strict = true;
  const useClientTools = clientTools.length > 0 && choice !== 'none';
  // One JSON reply only: a parallel second call (or a real call beside it) would make the reply ambiguous.
  const toolChoice: AnthropicToolChoice = useClientTools
    ? { type: 'any', disable_parallel_tool_use: true }
    : { type: 'tool', name, disable_parallel_tool_use: true };
  return { tool, toolChoice };
}

/** A tool name Anthropic accepts (`[a-zA-Z0-9_-]{1,64}`) derived from the schema's name. */
function toolName(schemaName: string): string {
  const cleaned = schemaName.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 64);
  return cleaned === '' ? DEFAULT_TOOL_NAME : cleaned;
}

/**
 * A JSON Schema usable as Anthropic's `input_schema`, whose root must be an object: a missing root type is taken
 * to be `object` and a missing schema allows any object; any other root type is a 400 naming `param`.
 */
export function objectSchema(schema: Record<string, unknown> | undefined, param: string): Record<string, unknown> {
  if (schema === undefined) return { type: 'object', properties: {} };
  if (schema.type === undefined) return { type: 'object', ...schema };
  if (schema.type !== 'object') {
    throw invalidRequest(
      `'${param}' must describe a JSON object (root "type": "object"); got ${JSON.stringify(schema.type)}.`,
      param,
    );
  }
  return schema;
}
