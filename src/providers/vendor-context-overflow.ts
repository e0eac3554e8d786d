import type { ContextOverflow } from '../canonical/errors.js';

/**
 * Each vendor's words for a prompt over the model's window, with where they put the two counts: Anthropic's
 * "prompt is too long: N tokens > M maximum", Gemini's "The input token count (N) exceeds the maximum number of
 * tokens allowed (M).", and OpenAI's and DeepSeek's "maximum context length is M tokens. However, your messages
 * resulted in N tokens" (DeepSeek: "you requested T tokens (N in the messages, …)").
 */
const WORDINGS: ReadonlyArray<{ pattern: RegExp; prompt: number; window: number }> = [
  { pattern: /prompt is too long: (\d+) tokens > (\d+) maximum/i, prompt: 1, window: 2 },
  {
    pattern: /input token count \((\d+)\) exceeds the maximum number of tokens allowed \((\d+)\)/i,
    prompt: 1,
    window: 2,
  },
  {
    pattern:
      /maximum context length is (\d+) tokens\. However, (?:your messages resulted in |you requested \d+ tokens \()(\d+)/i,
    prompt: 2,
    window: 1,
  },
];

/** OpenAI's code for it, in a body and in `response.failed`; its Responses wording names no counts. */
const OVERFLOW_CODE = 'context_length_exceeded';

/**
 * The overflow a vendor's error reply reports, with the counts it names; undefined when the reply is about
 * something else. A 400, or a 413 in these words (Anthropic's own 413 is about bytes, not this).
 */
export function vendorContextOverflow(
  status: number,
  message: string | undefined,
  vendorCode: string | undefined,
): ContextOverflow | undefined {
  if (status !== 400 && status !== 413) return undefined;
  for (const wording of WORDINGS) {
    const match = message === undefined ? null : wording.pattern.exec(message);
    if (match !== null)
      return { promptTokens: Number(match[wording.prompt]), contextWindow: Number(match[wording.window]) };
  }
  return status === 400 && vendorCode === OVERFLOW_CODE ? {} : undefined;
}
