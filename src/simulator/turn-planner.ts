/**
 * What the simulated model produces for one request, before any vendor names it: optional reasoning, the
 * visible text, and tool calls. Vendor modules translate their request into a `TurnInput` and render the
 * `TurnPlan` in their own wire format, so every vendor makes the same decisions:
 *
 * - Tool calls happen when tools are offered and not disabled (`tool_choice` none), and either the choice
 *   forces one (a named tool, or any/required → the `tool=` names or else the first tool), or the `tool=`
 *   directive names them and the conversation's last turn is a user turn (so a tool loop ends after results).
 * - A last turn of tool results makes the reply open with `Tool results: "…"` quoting them, which lets a
 *   test see that the results really reached the model.
 * - One output budget (`maxTokens`) covers reasoning, then text, then calls, as the vendors count
 *   reasoning inside the output cap. A call that does not fit whole is not emitted; the turn ends 'length'.
 * - Stop sequences cut prose only; the sentence before a call is fixed.
 */
import { stripDirectives, type SimulatorDirectives } from './fault-directives.js';
import {
  buildReply,
  countTokens,
  fillerWords,
  hashSeed,
  leadingWords,
  limitText,
  type Reply,
  type ReplyEnd,
} from './reply-engine.js';
import { argumentsFromSchema } from './schema-arguments.js';

export interface ToolOffer {
  name: string;
  /** The parameter schema as the vendor carries it (JSON Schema or Gemini's OpenAPI subset). */
  parameters: unknown;
}

export type ToolRequirement =
  | { kind: 'auto' }
  | { kind: 'none' }
  /** Must call some tool (OpenAI `required`, Anthropic `any`, Gemini `ANY`), optionally among `allowed`. */
  | { kind: 'any'; allowed?: readonly string[] }
  | { kind: 'named'; name: string };

export interface TurnInput {
  /** Everything the reply is derived from (the conversation); same seed, same turn. */
  seedText: string;
  lastUserText: string;
  directives: SimulatorDirectives;
  maxTokens?: number;
  stopSequences?: readonly string[];
  /** Several choices of one request (OpenAI `n`). */
  variant?: number;
  /** Whether the model reasons in this request (hidden or shown is the vendor's business). */
  reasoning: boolean;
  /** Scales the default reasoning length (OpenAI effort, Gemini level); 1 by default. */
  reasoningScale?: number;
  tools: readonly ToolOffer[];
  toolChoice: ToolRequirement;
  /** False when the request disabled parallel calls: only the first named tool is called. */
  parallelCalls: boolean;
  /** Text of each tool result, when the conversation's last turn carries results. */
  toolResults?: readonly string[];
  /**
   * Structured output was asked for (OpenAI `response_format`, Anthropic `output_config.format`, Gemini
   * `responseMimeType: application/json`): the text is JSON, an instance of `schema` when one is given (JSON
   * Schema or Gemini's subset), `{"text": …}` in plain JSON mode. As the real vendors answer.
   */
  jsonOutput?: { schema?: unknown };
}

export interface PlannedCall {
  name: string;
  input: Record<string, unknown>;
  /** `JSON.stringify(input)`: what OpenAI-style vendors send as `arguments`. */
  argumentsJson: string;
  /** Deterministic per request and call, for vendor-styled ids. */
  idSeed: string;
}

export interface TurnPlan {
  reasoning?: Reply;
  text: Reply;
  calls: PlannedCall[];
  end: ReplyEnd | 'tool-calls';
  stopSequence?: string;
  reasoningTokens: number;
  /** Everything generated: reasoning + text + calls (the cap itself when cut by it). */
  outputTokens: number;
}

export type PlanResult = { ok: true; plan: TurnPlan } | { ok: false; problem: string };

const QUOTED_RESULT_WORDS = 30;
/** Tool results are quoted word for word (agents' tests look for what a tool returned), up to this length. */
const QUOTED_RESULT_WORD_CHARS = 1_024;
const WHITESPACE = /\s+/;

function quote(text: string): string {
  const { words, more } = leadingWords(text, QUOTED_RESULT_WORDS, QUOTED_RESULT_WORD_CHARS);
  return `"${words.join(' ')}${more ? ' ...' : ''}"`;
}

export function toolResultsOpening(results: readonly string[]): string {
  return `Tool results: ${results.map(quote).join('; ')}.`;
}

function reasoningText(input: TurnInput): string {
  const words =
    input.directives.reasoningWords ??
    Math.round((12 + (hashSeed(`reasoning\n${input.seedText}`) % 9)) * (input.reasoningScale ?? 1));
  const subject =
    input.toolResults === undefined
      ? leadingWords(stripDirectives(input.lastUserText), 6).words.join(' ')
      : 'the tool results';
  const filler = fillerWords(`reasoning\n${input.variant ?? 0}\n${input.seedText}`, words);
  return `Thinking about "${subject}".${filler === '' ? '' : ` ${filler}`}`;
}

/** Names of the tools to call, or a problem when the directive names a tool the request does not offer. */
function chooseTools(input: TurnInput): { names: string[] } | { problem: string } {
  const { tools, toolChoice, directives } = input;
  if (tools.length === 0 || toolChoice.kind === 'none') {
    if (directives.toolNames !== undefined && tools.length === 0 && input.toolResults === undefined) {
      return { problem: `tool=${directives.toolNames.join(',')} but the request offers no tools` };
    }
    return { names: [] };
  }
  const offered = new Set(tools.map((tool) => tool.name));
  const requested = input.toolResults === undefined ? directives.toolNames : undefined;
  const unknown = requested?.find((name) => !offered.has(name));
  if (unknown !== undefined)
    return { problem: `tool '${unknown}' is not among the request's tools (${[...offered].join(', ')})` };
  let names: string[];
  switch (toolChoice.kind) {
    case 'named':
      names = [toolChoice.name];
      break;
    case 'any': {
      const allowed =
        toolChoice.allowed === undefined || toolChoice.allowed.length === 0 ? [...offered] : toolChoice.allowed;
      const picked = (directives.toolNames ?? []).filter((name) => allowed.includes(name));
      names = picked.length > 0 ? picked : allowed.slice(0, 1);
      break;
    }
    default:
      names = requested ?? [];
  }
  return { names: input.parallelCalls ? names : names.slice(0, 1) };
}

/** The reply as JSON: an instance of the schema, or the generated sentence wrapped in an object. */
function jsonReplyText(input: TurnInput, output: { schema?: unknown }): string {
  const opening = input.toolResults === undefined ? {} : { opening: toolResultsOpening(input.toolResults) };
  if (output.schema !== undefined)
    return JSON.stringify(argumentsFromSchema(output.schema, input.toolResults?.join('\n') ?? input.lastUserText));
  return JSON.stringify({
    text: buildReply({
      seedText: input.seedText,
      lastUserText: input.lastUserText,
      words: input.directives.words,
      variant: input.variant,
      ...opening,
    }).text,
  });
}

function callTokens(call: PlannedCall): number {
  return countTokens(call.name) + countTokens(call.argumentsJson);
}

/** The turn as generated, with the output tokens its usage reports (`output-tokens=` overrides what was generated). */
export function planTurn(input: TurnInput): PlanResult {
  const planned = planGeneratedTurn(input);
  const reported = input.directives.outputTokens;
  if (!planned.ok || reported === undefined) return planned;
  return { ok: true, plan: { ...planned.plan, outputTokens: Math.max(reported, planned.plan.reasoningTokens) } };
}

function planGeneratedTurn(input: TurnInput): PlanResult {
  const chosen = chooseTools(input);
  if ('problem' in chosen) return { ok: false, problem: chosen.problem };
  const cap = input.maxTokens;
  const remaining = (used: number): number | undefined => (cap === undefined ? undefined : Math.max(0, cap - used));

  const reasoning = input.reasoning ? limitText(reasoningText(input), { maxTokens: cap }) : undefined;
  const reasoningTokens = reasoning?.completionTokens ?? 0;
  const empty = limitText('', {});
  if (reasoning?.end === 'length') {
    return {
      ok: true,
      plan: { reasoning, text: empty, calls: [], end: 'length', reasoningTokens, outputTokens: reasoningTokens },
    };
  }

  const calling = chosen.names.length > 0;
  const text = calling
    ? input.directives.toolText === true
      ? limitText(`I will call ${chosen.names.join(' and ')}.`, { maxTokens: remaining(reasoningTokens) })
      : empty
    : input.jsonOutput !== undefined
      ? limitText(jsonReplyText(input, input.jsonOutput), {
          maxTokens: remaining(reasoningTokens),
          stopSequences: input.stopSequences,
        })
      : buildReply({
          seedText: input.seedText,
          lastUserText: input.lastUserText,
          words: input.directives.words,
          maxTokens: remaining(reasoningTokens),
          stopSequences: input.stopSequences,
          variant: input.variant,
          ...(input.toolResults === undefined ? {} : { opening: toolResultsOpening(input.toolResults) }),
        });
  let used = reasoningTokens + text.completionTokens;
  if (!calling || text.end === 'length') {
    const stop = text.stopSequence === undefined ? {} : { stopSequence: text.stopSequence };
    const end = calling ? 'length' : text.end;
    return {
      ok: true,
      plan: { ...(reasoning ? { reasoning } : {}), text, calls: [], end, ...stop, reasoningTokens, outputTokens: used },
    };
  }

  const calls: PlannedCall[] = [];
  let end: TurnPlan['end'] = 'tool-calls';
  for (const [index, name] of chosen.names.entries()) {
    const tool = input.tools.find((offer) => offer.name === name);
    const args = input.directives.toolArguments ?? argumentsFromSchema(tool?.parameters, input.lastUserText);
    const call: PlannedCall = {
      name,
      input: args,
      argumentsJson: JSON.stringify(args),
      idSeed: `${input.variant ?? 0}\n${index}\n${input.seedText}`,
    };
    const tokens = callTokens(call);
    if (cap !== undefined && used + tokens > cap) {
      end = 'length';
      used = cap;
      break;
    }
    used += tokens;
    calls.push(call);
  }
  return {
    ok: true,
    plan: { ...(reasoning ? { reasoning } : {}), text, calls, end, reasoningTokens, outputTokens: used },
  };
}
