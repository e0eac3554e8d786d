/**
 * Simulator directives: per-request faults, pacing and reply length, for every vendor.
 *
 * Grammar. A directive sits anywhere in the text of the last user message (so it survives the gateway,
 * which does not forward custom headers), or its settings form the value of the `x-simulator-fault`
 * request header:
 *
 *     [[sim <setting> <setting> ...]]          inside the message text
 *     x-simulator-fault: <setting> <setting> ...   as a header
 *
 *     setting   = name "=" value | fault-name
 *     fault-name = error | rate-limit | disconnect-mid-stream | slow-first-byte | stall-mid-stream | malformed-chunk
 *
 * Settings (all optional; whitespace separates them, values contain no spaces):
 *
 *     fault=<fault-name>     the fault to inject; a bare fault name is shorthand for it
 *     status=<400..599>      error: HTTP status of the vendor error (default 500)
 *     retry-after=<seconds>  rate-limit: value of the retry-after header (default 1)
 *     after=<n>              stream faults: content chunks sent before the fault fires (default 2; a
 *                            shorter reply sends all of them, then the fault fires before the finish).
 *                            `error` with `after` on a stream answers 200, sends n chunks, then the vendor's
 *                            in-stream error event
 *     delay=<ms>|forever     slow-first-byte: wait before the response headers (default 1000);
 *                            stall-mid-stream: length of the pause (default 1000), `forever` never resumes
 *     ttft=<ms>              time to first token (overrides the server's pacing)
 *     chunk-delay=<ms>       delay between stream chunks (overrides the server's pacing)
 *     words=<n>              number of generated words after the echo sentence
 *     tool=<name>[,<name>...]   answer with a call of each named tool (several names: parallel calls), when
 *                            the request offers those tools and its last turn is a user turn (not tool
 *                            results, so a tool loop ends); a name the request does not offer is a problem.
 *                            tool_choice none wins (plain text); a forced tool_choice picks the tool itself
 *     tool-text=0|1          1: the model says a short sentence ("I will call <name>.") before its calls
 *     args=<json>            the arguments of the `tool=` calls, exactly (instead of ones generated from the
 *                            tool's schema): a JSON object, percent-encoded as encodeURIComponent writes it
 *                            (so spaces and brackets cannot end the setting or the directive), e.g. an agent
 *                            test's `tool=Read args=${encodeURIComponent(JSON.stringify({ file_path }))}`
 *     reasoning-words=<n>    words of reasoning text when the model reasons (default 12 to 20, by seed)
 *     cache-read=<n>         report n prompt tokens as read from the vendor's prompt cache (capped at the
 *                            prompt), in the vendor's own usage fields
 *     cache-write=<n>        report n prompt tokens as written to the cache for 5 minutes (Anthropic's
 *                            cache_creation_input_tokens; the other vendors have no such field)
 *     cache-write-1h=<n>     report n more prompt tokens as written to the cache for 1 hour (Anthropic's
 *                            cache_creation.ephemeral_1h_input_tokens, also counted in cache_creation_input_tokens)
 *     only-key=<key>[,<key>...]  the fault fires only for requests made with one of these vendor API keys
 *                            (any other key gets the normal reply): one failing credential among several
 *     times=<n>              the fault fires only for the first n requests carrying the same directive
 *                            text (counted per simulator): a fault that a retry gets past
 *     prompt-cache=on|off    off: this request neither reads nor fills the simulator's prompt cache (its prompt
 *                            is all uncached); `cache-read=` / `cache-write=` switch it off as well
 *     context-window=<n>     the model's window is n tokens: a prompt of more input tokens (the vendor's own count)
 *                            is refused with the vendor's context-overflow error, exactly as the vendor words it
 *     prompt-tokens=<n>      report n prompt tokens in the usage, whatever the prompt counts (the cache counts
 *                            above are parts of them): a vendor that counts more, or less, than the gateway estimated
 *     output-tokens=<n>      report n output tokens in the usage (reasoning included), whatever was generated
 *
 * What `after` counts, per vendor: OpenAI/DeepSeek chunks after the role chunk, Anthropic
 * `content_block_delta` events, Gemini chunks before the final (finishReason) one.
 *
 * Non-stream requests: disconnect-mid-stream closes the socket before any response; stall-mid-stream sends
 * the headers, pauses, then the body; malformed-chunk sends a truncated JSON body with status 200.
 *
 * Several directives in one message: later settings win; header settings win over message settings.
 * An unknown name or a bad value is reported as a problem, which the simulator answers with a 400, so a
 * typo in a test fails loudly instead of silently running without its fault.
 *
 * The directive is not removed from the prompt: it is part of the text the reply is derived from.
 */

export const FAULT_NAMES = [
  'error',
  'rate-limit',
  'disconnect-mid-stream',
  'slow-first-byte',
  'stall-mid-stream',
  'malformed-chunk',
] as const;

export type FaultName = (typeof FAULT_NAMES)[number];

export interface SimulatorDirectives {
  fault?: FaultName;
  status?: number;
  retryAfterSeconds?: number;
  afterChunks?: number;
  delayMs?: number | 'forever';
  ttftMs?: number;
  chunkDelayMs?: number;
  words?: number;
  /** Tools to call (`tool=`), in order; several give parallel calls. */
  toolNames?: string[];
  /** Say a short sentence before the tool calls (`tool-text=1`). */
  toolText?: boolean;
  /** The exact arguments of the `tool=` calls (`args=`), instead of arguments generated from the schema. */
  toolArguments?: Record<string, unknown>;
  reasoningWords?: number;
  cacheReadTokens?: number;
  /** Prompt tokens written to the cache for 5 minutes (`cache-write=`). */
  cacheWriteTokens?: number;
  /** Prompt tokens written to the cache for 1 hour (`cache-write-1h=`), beside the 5-minute ones. */
  cacheWrite1hTokens?: number;
  /** The fault applies only to requests made with one of these API keys (`only-key=`). */
  onlyKeys?: string[];
  /** The fault applies only to the first n requests with the same `faultKey` (`times=`). */
  times?: number;
  /** Identity of the directive for `times`: the text it came from (set by parseRequestDirectives). */
  faultKey?: string;
  /** `prompt-cache=off`: the request bypasses the simulator's prompt cache. */
  promptCache?: boolean;
  /** `context-window=`: prompts of more input tokens are refused as the vendor refuses them. */
  contextWindow?: number;
  /** The prompt tokens the usage reports (`prompt-tokens=`), instead of the prompt's count. */
  promptTokens?: number;
  /** The output tokens the usage reports (`output-tokens=`), instead of what was generated. */
  outputTokens?: number;
}

export interface ParsedDirectives {
  directives: SimulatorDirectives;
  /** Human-readable descriptions of settings that could not be understood. */
  problems: string[];
}

export const FAULT_HEADER = 'x-simulator-fault';

const DIRECTIVE_PATTERN = /\[\[sim\b([^\]]*)\]\]/g;
const MAX_DELAY_MS = 10 * 60 * 1000;
const MAX_REPORTED_TOKENS = 100_000_000;
const DIGITS = /^\d+$/;
const WHITESPACE = /\s+/;
/** The union of the vendors' tool-name alphabets (Gemini also allows `.` and `:`). */
const TOOL_NAME = /^[A-Za-z0-9_.:-]{1,128}$/;
const API_KEY = /^[A-Za-z0-9_.:+/=-]{1,256}$/;

function isFaultName(value: string): value is FaultName {
  return (FAULT_NAMES as readonly string[]).includes(value);
}

function parseInteger(value: string, min: number, max: number): number | undefined {
  if (!DIGITS.test(value)) return undefined;
  const number = Number(value);
  return number >= min && number <= max ? number : undefined;
}

/** Applies one `name=value` or bare fault name to `into`; returns a problem description or undefined. */
function applySetting(setting: string, into: SimulatorDirectives): string | undefined {
  const equals = setting.indexOf('=');
  const name = equals === -1 ? setting : setting.slice(0, equals);
  const value = equals === -1 ? '' : setting.slice(equals + 1);
  if (equals === -1) {
    if (!isFaultName(name)) return `unknown setting '${setting}'`;
    into.fault = name;
    return undefined;
  }
  let parsed: number | undefined;
  switch (name) {
    case 'fault':
      if (!isFaultName(value)) return `unknown fault '${value}' (known: ${FAULT_NAMES.join(', ')})`;
      into.fault = value;
      return undefined;
    case 'delay':
      if (value === 'forever') {
        into.delayMs = 'forever';
        return undefined;
      }
      parsed = parseInteger(value, 0, MAX_DELAY_MS);
      if (parsed !== undefined) into.delayMs = parsed;
      break;
    case 'status':
      parsed = parseInteger(value, 400, 599);
      if (parsed !== undefined) into.status = parsed;
      break;
    case 'retry-after':
      parsed = parseInteger(value, 0, 86_400);
      if (parsed !== undefined) into.retryAfterSeconds = parsed;
      break;
    case 'after':
      parsed = parseInteger(value, 0, 1_000_000);
      if (parsed !== undefined) into.afterChunks = parsed;
      break;
    case 'ttft':
      parsed = parseInteger(value, 0, MAX_DELAY_MS);
      if (parsed !== undefined) into.ttftMs = parsed;
      break;
    case 'chunk-delay':
      parsed = parseInteger(value, 0, MAX_DELAY_MS);
      if (parsed !== undefined) into.chunkDelayMs = parsed;
      break;
    case 'words':
      parsed = parseInteger(value, 0, 100_000);
      if (parsed !== undefined) into.words = parsed;
      break;
    case 'reasoning-words':
      parsed = parseInteger(value, 0, 100_000);
      if (parsed !== undefined) into.reasoningWords = parsed;
      break;
    case 'cache-read':
      parsed = parseInteger(value, 0, MAX_REPORTED_TOKENS);
      if (parsed !== undefined) into.cacheReadTokens = parsed;
      break;
    case 'cache-write':
      parsed = parseInteger(value, 0, MAX_REPORTED_TOKENS);
      if (parsed !== undefined) into.cacheWriteTokens = parsed;
      break;
    case 'cache-write-1h':
      parsed = parseInteger(value, 0, MAX_REPORTED_TOKENS);
      if (parsed !== undefined) into.cacheWrite1hTokens = parsed;
      break;
    case 'prompt-tokens':
      parsed = parseInteger(value, 0, MAX_REPORTED_TOKENS);
      if (parsed !== undefined) into.promptTokens = parsed;
      break;
    case 'output-tokens':
      parsed = parseInteger(value, 0, MAX_REPORTED_TOKENS);
      if (parsed !== undefined) into.outputTokens = parsed;
      break;
    case 'only-key': {
      const keys = value.split(',');
      if (!keys.every((key) => API_KEY.test(key))) return `bad value '${value}' for 'only-key'`;
      into.onlyKeys = keys;
      return undefined;
    }
    case 'context-window':
      parsed = parseInteger(value, 1, MAX_REPORTED_TOKENS);
      if (parsed !== undefined) into.contextWindow = parsed;
      break;
    case 'times':
      parsed = parseInteger(value, 1, 1_000_000);
      if (parsed !== undefined) into.times = parsed;
      break;
    case 'prompt-cache':
      if (value !== 'on' && value !== 'off') return `bad value '${value}' for 'prompt-cache' (on or off)`;
      into.promptCache = value === 'on';
      return undefined;
    case 'tool-text':
      parsed = parseInteger(value, 0, 1);
      if (parsed !== undefined) into.toolText = parsed === 1;
      break;
    case 'args': {
      const args = decodeToolArguments(value);
      if (args === undefined) return `bad value '${value}' for 'args' (a percent-encoded JSON object)`;
      into.toolArguments = args;
      return undefined;
    }
    case 'tool': {
      const names = value.split(',');
      if (!names.every((toolName) => TOOL_NAME.test(toolName))) return `bad value '${value}' for 'tool'`;
      into.toolNames = names;
      return undefined;
    }
    default:
      return `unknown setting '${name}'`;
  }
  return parsed === undefined ? `bad value '${value}' for '${name}'` : undefined;
}

function decodeToolArguments(value: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(decodeURIComponent(value));
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** Parses a settings list (the header form, or the inside of one `[[sim ...]]`). */
export function parseDirectiveSettings(settings: string, into: ParsedDirectives = emptyParsed()): ParsedDirectives {
  for (const setting of settings.split(WHITESPACE)) {
    if (setting.length === 0) continue;
    const problem = applySetting(setting, into.directives);
    if (problem !== undefined) into.problems.push(problem);
  }
  return into;
}

/** Collects every `[[sim ...]]` directive of a message text, later ones overriding earlier ones. */
export function parseDirectivesInText(text: string, into: ParsedDirectives = emptyParsed()): ParsedDirectives {
  for (const match of text.matchAll(DIRECTIVE_PATTERN)) parseDirectiveSettings(match[1] ?? '', into);
  return into;
}

/** The text without its `[[sim …]]` directives: what the model "writes about" (reasoning, tool arguments). */
export function stripDirectives(text: string): string {
  return text.replace(DIRECTIVE_PATTERN, ' ').trim();
}

/**
 * The directives of one request: those in the last user message text, then the header's on top.
 * `header` is the raw header value (node gives an array when the header was repeated).
 */
export function parseRequestDirectives(lastUserText: string, header: string | string[] | undefined): ParsedDirectives {
  const parsed = parseDirectivesInText(lastUserText);
  const headerValues = header === undefined ? [] : Array.isArray(header) ? header : [header];
  for (const value of headerValues) parseDirectiveSettings(value, parsed);
  if (parsed.directives.times !== undefined)
    parsed.directives.faultKey = `${lastUserText}\u0000${headerValues.join(' ')}`;
  return parsed;
}

function emptyParsed(): ParsedDirectives {
  return { directives: {}, problems: [] };
}
