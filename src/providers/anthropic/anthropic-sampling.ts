/**
 * Which sampling fields an Anthropic model takes. Claude 4.7 and later models answer any `temperature`, `top_p` or
 * `top_k` with a 400 (the newest SDK types no longer have them); Claude 4.1 up to 4.6 take `temperature` or `top_p`,
 * not both; older models take all three. Read from the model id, so an operator's `upstreamModel` is judged as sent.
 */
export type AnthropicSamplingRule = 'all' | 'temperature-or-top-p' | 'none';

/** `claude-<tier>-<major>[-<minor>]`, with an optional date after it (`claude-sonnet-4-20250514` is 4.0). */
const MODEL_VERSION = /claude-[a-z]+-(\d+)(?:-(\d{1,2})(?!\d))?/;

export function anthropicSamplingRule(upstreamModel: string): AnthropicSamplingRule {
  const match = MODEL_VERSION.exec(upstreamModel);
  if (match === null) return 'all';
  const version = Number(match[1]) * 100 + Number(match[2] ?? 0);
  if (version >= 407) return 'none';
  return version >= 401 ? 'temperature-or-top-p' : 'all';
}
