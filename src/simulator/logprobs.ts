/**
 * Log probabilities of a simulated reply's tokens (its stream pieces, about one token each): deterministic values
 * from the token's characters, and for `top` alternatives the chosen token first, then made-up ones less likely.
 * OpenAI and Gemini simulators dress them in their own shapes.
 */
export interface SimulatedLogprob {
  token: string;
  logprob: number;
  top: Array<{ token: string; logprob: number }>;
}

export function simulatedLogprobs(pieces: readonly string[], top: number): SimulatedLogprob[] {
  return pieces.map((token) => {
    const logprob = tokenLogprob(token);
    const alternatives = Array.from({ length: Math.max(0, top - 1) }, (_, rank) => ({
      token: `${token}~${rank + 1}`,
      logprob: round(logprob - 1 - rank),
    }));
    return { token, logprob, top: top === 0 ? [] : [{ token, logprob }, ...alternatives] };
  });
}

function tokenLogprob(token: string): number {
  let sum = 0;
  for (let index = 0; index < token.length; index++) sum += token.charCodeAt(index);
  return round(-(sum % 97) / 100);
}

function round(value: number): number {
  return Math.round(value * 10_000) / 10_000;
}
