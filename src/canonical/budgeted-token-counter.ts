/** Tokens per character for text met before anything was counted (o200k on English prose is about 0.25). */
const DEFAULT_TOKENS_PER_CHAR = 0.3;

/**
 * Counts one prompt's texts with `measure` until `budget` characters are spent, then extrapolates the rest by the
 * ratio counted so far (DEFAULT_TOKENS_PER_CHAR before anything was). Tokenizing costs about 1 to 4 µs per
 * character on the event loop, so a body-sized prompt is counted exactly only up to the budget. Deterministic:
 * the same texts in the same order are always the same number. The gateway's estimate (canonical/count-tokens.ts)
 * and the simulator's usage (simulator/reply-engine.ts) both count with it, so the two agree at any size.
 */
export class BudgetedTokenCounter {
  private countedChars = 0;
  private countedTokens = 0;

  constructor(
    private readonly measure: (text: string) => number,
    private budget: number,
  ) {}

  count(text: string): number {
    if (text === '') return 0;
    const exact = text.length <= this.budget ? text : text.slice(0, this.budget);
    let tokens = 0;
    if (exact.length > 0) {
      tokens = this.measure(exact);
      this.budget -= exact.length;
      this.countedChars += exact.length;
      this.countedTokens += tokens;
    }
    const rest = text.length - exact.length;
    if (rest === 0) return tokens;
    const ratio = this.countedChars === 0 ? DEFAULT_TOKENS_PER_CHAR : this.countedTokens / this.countedChars;
    return tokens + Math.ceil(rest * ratio);
  }
}
