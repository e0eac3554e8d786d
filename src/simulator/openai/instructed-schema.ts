/**
 * A JSON Schema the prompt asks the reply to follow. DeepSeek has JSON mode but no schema-constrained output, so
 * a gateway serves structured output there as `json_object` plus a system instruction that ends in
 * "JSON Schema:" and the schema on its own line; a real model shapes its JSON by it, and so does the simulator.
 */
import type { OpenAiMessage } from './openai-types.js';
import { contentText } from './openai-prompt.js';

const MARKER = /JSON Schema:[ \t]*\r?\n?/g;

/** The schema the last system (developer) message carrying one names, or undefined when none does. */
export function instructedSchema(messages: readonly OpenAiMessage[]): Record<string, unknown> | undefined {
  for (let index = messages.length - 1; index >= 0; index--) {
    const message = messages[index];
    if (message?.role !== 'system' && message?.role !== 'developer') continue;
    const schema = schemaAfterMarker(contentText(message.content));
    if (schema !== undefined) return schema;
  }
  return undefined;
}

function schemaAfterMarker(text: string): Record<string, unknown> | undefined {
  let found: Record<string, unknown> | undefined;
  for (const match of text.matchAll(MARKER)) {
    const rest = text.slice(match.index + match[0].length);
    const line = rest.split('\n', 1)[0] ?? '';
    try {
      const parsed = JSON.parse(line) as unknown;
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed))
        found = parsed as Record<string, unknown>;
    } catch {
      // Not a schema on that line: prose that happens to say "JSON Schema:".
    }
  }
  return found;
}
