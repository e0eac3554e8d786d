/**
 * Anthropic's checks of single content blocks, with the API's `messages.N.content.M…` paths and wording:
 * non-empty, non-whitespace text (docs/protocols/translation.md#empty-text-blocks), images only as jpeg/png/gif/webp
 * whose base64 decodes to that format, PDFs that are PDFs, tool ids matching `^[a-zA-Z0-9_-]+$`
 * (#tool-ids-anthropic-refuses), object inputs, and thinking blocks whose signature this simulator issued
 * (#signed-thinking-in-tool-loops, #reasoning-replayed-only-to-its-vendor).
 */
import { WEB_IMAGE_TYPES, decodeBase64, isPdf, sniffImageType } from '../media.js';
import { isThinkingSignatureValid } from '../signatures.js';

export type Json = Record<string, unknown>;

export class AnthropicInvalid extends Error {}

export function fail(message: string): never {
  throw new AnthropicInvalid(message);
}

export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function requireString(holder: Json, key: string, path: string): string {
  const value = holder[key];
  if (value === undefined) fail(`${path}: Field required`);
  if (typeof value !== 'string') fail(`${path}: Input should be a valid string`);
  return value;
}

const TOOL_ID = /^[a-zA-Z0-9_-]+$/;
const NON_WHITESPACE = /\S/;
const KNOWN_BLOCKS = [
  'text',
  'image',
  'document',
  'search_result',
  'tool_use',
  'tool_result',
  'thinking',
  'redacted_thinking',
  'server_tool_use',
  'web_search_tool_result',
  'web_fetch_tool_result',
  'code_execution_tool_result',
  'mcp_tool_use',
  'mcp_tool_result',
  'container_upload',
];
const USER_ONLY: ReadonlySet<string> = new Set([
  'image',
  'document',
  'search_result',
  'tool_result',
  'container_upload',
]);
const ASSISTANT_ONLY: ReadonlySet<string> = new Set([
  'tool_use',
  'thinking',
  'redacted_thinking',
  'server_tool_use',
  'mcp_tool_use',
]);
const TOOL_RESULT_BLOCKS: ReadonlySet<string> = new Set(['text', 'image', 'document', 'search_result']);

/** The text rule of every text block: it must be non-empty and hold something besides whitespace. */
export function checkText(text: string, scope: string): void {
  if (text.length === 0) fail(`${scope}: text content blocks must be non-empty`);
  if (!NON_WHITESPACE.test(text)) fail(`${scope}: text content blocks must contain non-whitespace text`);
}

export function checkToolId(id: unknown, path: string): void {
  if (typeof id !== 'string') fail(`${path}: Input should be a valid string`);
  if (!TOOL_ID.test(id)) fail(`${path}: String should match pattern '^[a-zA-Z0-9_-]+$'`);
}

function checkImage(block: Json, path: string): void {
  const source = block['source'];
  if (!isObject(source)) fail(`${path}.image.source: Field required`);
  const type = source['type'];
  if (type === 'url') return void requireString(source, 'url', `${path}.image.source.url.url`);
  if (type === 'file') return void requireString(source, 'file_id', `${path}.image.source.file.file_id`);
  if (type !== 'base64')
    fail(
      `${path}.image.source: Input tag '${String(type)}' found using 'type' does not match any of the expected tags: 'base64', 'url', 'file'`,
    );
  const mediaType = source['media_type'];
  if (typeof mediaType !== 'string' || !WEB_IMAGE_TYPES.includes(mediaType)) {
    fail(
      `${path}.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'`,
    );
  }
  const bytes = decodeBase64(requireString(source, 'data', `${path}.image.source.base64.data`));
  if (bytes === undefined) fail(`${path}.image.source.base64.data: The image data is not valid base64.`);
  const actual = sniffImageType(bytes);
  if (actual === undefined) fail(`${path}.image.source.base64.data: Could not process image`);
  if (actual !== mediaType)
    fail(`${path}.image.source.base64.data: Image does not match the provided media type ${mediaType}`);
}

function checkDocument(block: Json, path: string): void {
  const source = block['source'];
  if (!isObject(source)) fail(`${path}.document.source: Field required`);
  switch (source['type']) {
    case 'base64': {
      if (source['media_type'] !== 'application/pdf')
        fail(`${path}.document.source.base64.media_type: Input should be 'application/pdf'`);
      const bytes = decodeBase64(requireString(source, 'data', `${path}.document.source.base64.data`));
      if (bytes === undefined || !isPdf(bytes))
        fail(`${path}.document.source.base64.data: The PDF specified was not valid.`);
      return;
    }
    case 'text':
      if (source['media_type'] !== 'text/plain')
        fail(`${path}.document.source.text.media_type: Input should be 'text/plain'`);
      return void requireString(source, 'data', `${path}.document.source.text.data`);
    case 'url':
      return void requireString(source, 'url', `${path}.document.source.url.url`);
    case 'file':
      return void requireString(source, 'file_id', `${path}.document.source.file.file_id`);
    case 'content':
      return;
    default:
      fail(
        `${path}.document.source: Input tag '${String(source['type'])}' found using 'type' does not match any of the expected tags: 'base64', 'text', 'content', 'url', 'file'`,
      );
  }
}

function checkToolResult(block: Json, path: string): void {
  checkToolId(block['tool_use_id'], `${path}.tool_result.tool_use_id`);
  const isError = block['is_error'];
  if (isError !== undefined && typeof isError !== 'boolean')
    fail(`${path}.tool_result.is_error: Input should be a valid boolean`);
  const content = block['content'];
  if (content === undefined || typeof content === 'string') return;
  if (!Array.isArray(content)) fail(`${path}.tool_result.content: Input should be a valid list`);
  content.forEach((inner, index) => {
    const innerPath = `${path}.tool_result.content.${index}`;
    if (!isObject(inner) || typeof inner['type'] !== 'string' || !TOOL_RESULT_BLOCKS.has(inner['type'])) {
      fail(
        `${innerPath}: Input tag '${isObject(inner) ? String(inner['type']) : ''}' found using 'type' does not match any of the expected tags: 'text', 'image', 'document', 'search_result'`,
      );
    }
    checkBlock(inner, 'user', innerPath);
  });
}

/** One block of a `role` message (or of a tool result, which counts as user content). */
export function checkBlock(block: unknown, role: string, path: string): void {
  if (!isObject(block)) fail(`${path}: Input should be a valid dictionary`);
  const type = block['type'];
  if (typeof type !== 'string' || !KNOWN_BLOCKS.includes(type)) {
    fail(
      `${path}: Input tag '${String(type)}' found using 'type' does not match any of the expected tags: ${KNOWN_BLOCKS.map((tag) => `'${tag}'`).join(', ')}`,
    );
  }
  if ((role === 'assistant' && USER_ONLY.has(type)) || (role === 'user' && ASSISTANT_ONLY.has(type))) {
    fail(`${path}.type: \`${type}\` blocks are not allowed in \`${role}\` messages`);
  }
  switch (type) {
    case 'text':
      checkText(requireString(block, 'text', `${path}.text.text`), 'messages');
      return;
    case 'image':
      checkImage(block, path);
      return;
    case 'document':
      checkDocument(block, path);
      return;
    case 'tool_use':
      checkToolId(block['id'], `${path}.tool_use.id`);
      requireString(block, 'name', `${path}.tool_use.name`);
      if (!isObject(block['input'])) fail(`${path}.tool_use.input: Input should be a valid dictionary`);
      return;
    case 'tool_result':
      checkToolResult(block, path);
      return;
    case 'thinking': {
      const thinking = requireString(block, 'thinking', `${path}.thinking.thinking`);
      const signature = requireString(block, 'signature', `${path}.thinking.signature`);
      if (!isThinkingSignatureValid(thinking, signature)) fail(`${path}: Invalid signature in thinking block`);
      return;
    }
    case 'redacted_thinking':
      requireString(block, 'data', `${path}.redacted_thinking.data`);
      // The simulator never issues redacted thinking, so any such block was made elsewhere.
      fail(`${path}: Invalid \`data\` in \`redacted_thinking\` block`);
  }
}
