/**
 * Anthropic's conversation rules over `messages`: roles, non-empty content, a user turn first, no trailing
 * whitespace at the end of a prefill, tool_use/tool_result pairing between adjacent turns
 * (docs/protocols/translation.md#one-user-message-per-tool-turn), and with thinking on, the assistant turn of the
 * current tool loop starting with its signed thinking block (#signed-thinking-in-tool-loops).
 */
import { checkBlock, checkText, fail, isObject, requireString, type Json } from './anthropic-validate-blocks.js';

const TRAILING_WHITESPACE = /\s$/;
const THINKING_TYPES: ReadonlySet<string> = new Set(['thinking', 'redacted_thinking']);
const DOCS_THINKING = 'https://docs.claude.com/en/docs/build-with-claude/extended-thinking';

function blocksOf(message: Json): Json[] {
  const content = message['content'];
  return Array.isArray(content) ? (content as Json[]) : [];
}

function idsOf(message: Json | undefined, type: 'tool_use' | 'tool_result'): string[] {
  if (message === undefined) return [];
  const key = type === 'tool_use' ? 'id' : 'tool_use_id';
  return blocksOf(message).flatMap((block) => (block['type'] === type ? [block[key] as string] : []));
}

function checkShape(message: unknown, index: number, isLast: boolean): void {
  const path = `messages.${index}`;
  if (!isObject(message)) fail(`${path}: Input should be a valid dictionary`);
  const role = message['role'];
  if (role !== 'user' && role !== 'assistant' && role !== 'system')
    fail(`${path}.role: Input should be 'user', 'assistant' or 'system'`);
  const content = message['content'];
  if (role === 'system') {
    checkSystemMessage(content, path);
    return;
  }
  const finalAssistant = isLast && role === 'assistant';
  if (typeof content === 'string') {
    if (content.length === 0) {
      if (!finalAssistant)
        fail(`${path}: all messages must have non-empty content except for the optional final assistant message`);
    } else {
      checkText(content, 'messages');
    }
  } else if (Array.isArray(content)) {
    if (content.length === 0 && !finalAssistant)
      fail(`${path}: all messages must have non-empty content except for the optional final assistant message`);
    content.forEach((block, blockIndex) => {
      checkBlock(block, role, `${path}.content.${blockIndex}`);
    });
  } else {
    fail(`${path}.content: Input should be a valid list`);
  }
  if (finalAssistant) {
    const last = typeof content === 'string' ? content : (blocksOf(message).at(-1)?.['text'] as string | undefined);
    if (typeof last === 'string' && TRAILING_WHITESPACE.test(last))
      fail('messages: final assistant content cannot end with trailing whitespace');
  }
}

/** `SystemMessageParam`: non-empty text, as a string or text blocks only. */
function checkSystemMessage(content: unknown, path: string): void {
  if (typeof content === 'string') {
    checkText(content, 'messages');
    return;
  }
  if (!Array.isArray(content)) fail(`${path}.content: Input should be a valid string or a valid list`);
  if (content.length === 0)
    fail(`${path}: all messages must have non-empty content except for the optional final assistant message`);
  content.forEach((block, index) => {
    if (!isObject(block) || block['type'] !== 'text') {
      fail(
        `${path}.content.${index}: Input tag '${isObject(block) ? String(block['type']) : ''}' found using 'type' does not match any of the expected tags: 'text'`,
      );
    }
    checkText(requireString(block, 'text', `${path}.content.${index}.text`), 'messages');
  });
}

/** Every tool_use is answered in the very next (user) message, and every tool_result answers the previous one. */
function checkToolPairing(messages: readonly Json[]): void {
  const seen = new Set<string>();
  messages.forEach((message, index) => {
    if (message['role'] === 'assistant') {
      const uses = idsOf(message, 'tool_use');
      for (const [position, id] of uses.entries()) {
        if (seen.has(id)) fail(`messages.${index}.content.${position}: \`tool_use\` ids must be unique`);
        seen.add(id);
      }
      if (uses.length === 0) return;
      const next = messages[index + 1];
      const answered = new Set(next?.['role'] === 'user' ? idsOf(next, 'tool_result') : []);
      const unanswered = uses.filter((id) => !answered.has(id));
      if (unanswered.length > 0) {
        fail(
          `messages.${Math.min(index + 1, messages.length - 1)}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${unanswered.join(', ')}. ` +
            'Each `tool_use` block must have a corresponding `tool_result` block in the next message.',
        );
      }
      return;
    }
    const previous = messages[index - 1];
    const opened = new Set(previous?.['role'] === 'assistant' ? idsOf(previous, 'tool_use') : []);
    blocksOf(message).forEach((block, position) => {
      if (block['type'] === 'tool_result' && !opened.has(block['tool_use_id'] as string)) {
        fail(
          `messages.${index}.content.${position}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(block['tool_use_id'])}. ` +
            'Each `tool_result` block must have a corresponding `tool_use` block in the previous message.',
        );
      }
    });
  });
}

/** With thinking on, the assistant turn answered by the final tool results must open with its thinking. */
function checkThinkingReplay(messages: readonly Json[]): void {
  const last = messages.at(-1);
  if (last === undefined || last['role'] !== 'user' || idsOf(last, 'tool_result').length === 0) return;
  const index = messages.length - 2;
  const assistant = messages[index];
  if (assistant === undefined) return;
  const content = assistant['content'];
  const firstType = typeof content === 'string' ? 'text' : String(blocksOf(assistant)[0]?.['type']);
  if (!THINKING_TYPES.has(firstType)) {
    fail(
      `messages.${index}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${firstType}\`. ` +
        'When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). ' +
        `We recommend you include thinking blocks from previous turns. To avoid this requirement, disable \`thinking\`. Please consult our documentation at ${DOCS_THINKING}`,
    );
  }
}

function checkNoFinalThinking(messages: readonly Json[]): void {
  const last = messages.at(-1);
  if (last?.['role'] !== 'assistant') return;
  blocksOf(last).forEach((block, position) => {
    if (THINKING_TYPES.has(String(block['type']))) {
      fail(
        `messages.${messages.length - 1}.content.${position}: When thinking is disabled, an \`assistant\` message in the final position cannot contain \`thinking\`. ` +
          'To use thinking blocks, enable `thinking` in your request.',
      );
    }
  });
}

export function checkMessages(messages: unknown, thinkingEnabled: boolean): void {
  if (messages === undefined) fail('messages: Field required');
  if (!Array.isArray(messages)) fail('messages: Input should be a valid list');
  if (messages.length === 0) fail('messages: at least one message is required');
  messages.forEach((message, index) => {
    checkShape(message, index, index === messages.length - 1);
  });
  const checked = messages as Json[];
  // System messages are instructions at their place; the conversation itself starts with a user turn.
  if (checked.find((message) => message['role'] !== 'system')?.['role'] !== 'user')
    fail('messages: first message must use the "user" role');
  checkToolPairing(checked);
  if (thinkingEnabled) checkThinkingReplay(checked);
  else checkNoFinalThinking(checked);
}
