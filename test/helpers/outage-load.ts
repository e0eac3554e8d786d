/**
 * Client load for outage tests: workers that call the gateway with the official `openai` and `@anthropic-ai/sdk`
 * clients, streams and non-streams, translated and same-format routes, until stopped. Each call is recorded as
 * completed (the whole reply arrived: a non-stream body, or a stream to its finish) with the gateway's request
 * id, or as failed with its status and `retry-after`. SDK retries are off, so every answer is seen.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';

export interface CallOutcome {
  kind: string;
  /** The gateway's `x-request-id`, when the reply got that far. */
  requestId: string | undefined;
  completed: boolean;
  /** HTTP status of a refused call (undefined: a connection error or a stream cut after its headers). */
  status?: number;
  retryAfter?: string | null;
  error?: string;
}

export interface Load {
  /** Outcomes so far. */
  readonly outcomes: readonly CallOutcome[];
  /** Stops starting calls and waits for the ones running. */
  stop(): Promise<CallOutcome[]>;
}

type Call = () => Promise<CallOutcome>;

/** Streams take ~1–2 s (paced chunks), so some are always in flight when the database goes away. */
const STREAM_PROMPT = 'Tell a story about toll gates [[sim words=30 chunk-delay=40]]';
const JSON_PROMPT = 'Describe a toll gate [[sim words=12 ttft=150]]';

export function startLoad(gatewayUrl: string, key: string, workers = 8): Load {
  const openai = new OpenAI({ apiKey: key, baseURL: `${gatewayUrl}/v1`, maxRetries: 0, timeout: 60_000 });
  const anthropic = new Anthropic({ apiKey: key, baseURL: gatewayUrl, maxRetries: 0, timeout: 60_000 });
  const calls: Call[] = [
    () => openaiCall(openai, 'beta-5.4', true),
    () => anthropicCall(anthropic, 'alpha-sonnet-5', true),
    () => openaiCall(openai, 'alpha-haiku-4-5', false),
    () => anthropicCall(anthropic, 'delta-v4-flash', false),
    () => openaiCall(openai, 'gamma-3.5-flash', true),
    () => anthropicCall(anthropic, 'beta-5.4', true),
    () => openaiCall(openai, 'delta-v4-flash', false),
    () => anthropicCall(anthropic, 'alpha-haiku-4-5', false),
  ];
  const outcomes: CallOutcome[] = [];
  let stopping = false;
  const running = Array.from({ length: workers }, async (_, worker) => {
    const call = calls[worker % calls.length]!;
    while (!stopping) {
      const outcome = await call();
      outcomes.push(outcome);
      // A refused call is retried after a pause, as a client honouring retry-after would (shortened: a test).
      if (!outcome.completed) await new Promise((resolve) => setTimeout(resolve, 200));
    }
  });
  return {
    outcomes,
    async stop() {
      stopping = true;
      await Promise.all(running);
      return outcomes;
    },
  };
}

async function openaiCall(client: OpenAI, model: string, stream: boolean): Promise<CallOutcome> {
  const kind = `openai ${model} ${stream ? 'stream' : 'json'}`;
  let requestId: string | undefined;
  try {
    if (stream) {
      const { data, response } = await client.chat.completions
        .create({
          model,
          stream: true,
          max_completion_tokens: 200,
          messages: [{ role: 'user', content: STREAM_PROMPT }],
        })
        .withResponse();
      requestId = response.headers.get('x-request-id') ?? undefined;
      let finished = false;
      for await (const chunk of data) if (chunk.choices[0]?.finish_reason) finished = true;
      return { kind, requestId, completed: finished };
    }
    const { data, response } = await client.chat.completions
      .create({ model, max_completion_tokens: 200, messages: [{ role: 'user', content: JSON_PROMPT }] })
      .withResponse();
    requestId = response.headers.get('x-request-id') ?? undefined;
    return { kind, requestId, completed: data.choices[0]?.finish_reason !== undefined };
  } catch (error) {
    return failed(kind, requestId, error, OpenAI.APIError);
  }
}

async function anthropicCall(client: Anthropic, model: string, stream: boolean): Promise<CallOutcome> {
  const kind = `anthropic ${model} ${stream ? 'stream' : 'json'}`;
  let requestId: string | undefined;
  try {
    if (stream) {
      const { data, response } = await client.messages
        .create({ model, stream: true, max_tokens: 200, messages: [{ role: 'user', content: STREAM_PROMPT }] })
        .withResponse();
      requestId = response.headers.get('x-request-id') ?? undefined;
      let stopped = false;
      for await (const event of data) if (event.type === 'message_stop') stopped = true;
      return { kind, requestId, completed: stopped };
    }
    const { data, response } = await client.messages
      .create({ model, max_tokens: 200, messages: [{ role: 'user', content: JSON_PROMPT }] })
      .withResponse();
    requestId = response.headers.get('x-request-id') ?? undefined;
    return { kind, requestId, completed: data.stop_reason !== null };
  } catch (error) {
    return failed(kind, requestId, error, Anthropic.APIError);
  }
}

function failed(
  kind: string,
  requestId: string | undefined,
  error: unknown,
  apiError: abstract new (...args: never[]) => { status: number | undefined; headers: Headers | undefined },
): CallOutcome {
  const outcome: CallOutcome = {
    kind,
    requestId,
    completed: false,
    error: error instanceof Error ? error.message : String(error),
  };
  if (error instanceof apiError) {
    if (error.status !== undefined) outcome.status = error.status;
    outcome.retryAfter = error.headers?.get('retry-after') ?? null;
  }
  return outcome;
}
