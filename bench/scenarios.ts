/**
 * What is measured: the two targets (the simulator called directly, and the gateway in front of it) and
 * the three load shapes. Both targets get the same prompt, so the simulator does the same work behind
 * either and the difference is the gateway's own.
 */

export type TargetName = 'direct' | 'gateway';

export interface Target {
  name: TargetName;
  /** `http://host:port`. */
  origin: string;
  /** Path of the chat-completions endpoint on that origin. */
  path: string;
  model: string;
  apiKey: string;
}

export interface Scenario {
  id: string;
  title: string;
  stream: boolean;
  concurrency: number;
}

export const SCENARIOS: readonly Scenario[] = [
  { id: 'non-stream-c1', title: 'non-stream, concurrency 1', stream: false, concurrency: 1 },
  { id: 'non-stream-c64', title: 'non-stream, concurrency 64', stream: false, concurrency: 64 },
  { id: 'stream-c64', title: 'stream, concurrency 64', stream: true, concurrency: 64 },
];

export const MAX_CONCURRENCY = Math.max(...SCENARIOS.map((scenario) => scenario.concurrency));

/**
 * The simulator's CLI starts without pacing, but the directive makes "no artificial delay" explicit, so a
 * later default (say, a realistic first-token delay) cannot silently turn the bench into a sleep test. It
 * travels in the message text because the gateway does not forward custom headers. `words` fixes the
 * reply length (about one token and one stream chunk per word).
 */
export function chatRequestBody(target: Target, stream: boolean, replyWords: number): string {
  const prompt = `Benchmark prompt: describe a quiet river in the morning. [[sim ttft=0 chunk-delay=0 words=${replyWords}]]`;
  return JSON.stringify({
    model: target.model,
    messages: [{ role: 'user', content: prompt }],
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  });
}
