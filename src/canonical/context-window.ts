import { type ContextOverflow, GatewayError } from './errors.js';

/** A prompt over its model's context window, counted by the gateway before anything is held or sent. */
export function contextWindowExceeded(promptTokens: number, contextWindow: number): GatewayError {
  return new GatewayError(
    'context_length_exceeded',
    `The prompt has ${promptTokens} tokens, more than the model's context window of ${contextWindow}.`,
    { contextOverflow: { promptTokens, contextWindow } },
  );
}

/** Both counts of an overflow, once the gateway has filled in what the vendor did not say. */
export type CountedOverflow = Required<ContextOverflow>;

/** The error's counts when both are known: what every protocol's wording of the refusal needs. */
export function countedOverflow(error: GatewayError): CountedOverflow | undefined {
  const overflow = error.contextOverflow;
  if (overflow?.promptTokens === undefined || overflow.contextWindow === undefined) return undefined;
  return { promptTokens: overflow.promptTokens, contextWindow: overflow.contextWindow };
}
