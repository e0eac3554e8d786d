/**
 * The bench's own upstream: a deliberately small vendor stand-in speaking OpenAI chat completions
 * (`POST …/chat/completions`) and Anthropic messages (`POST …/v1/messages`), JSON and SSE, with usage.
 *
 * Hand-written on node:http rather than reusing `src/simulator/`: the simulator validates, tokenizes and
 * plans replies, and that work would dominate the figures the bench compares. This mock parses the body
 * (to find `model`, `stream` and the nonce) and writes pre-shaped JSON. Every SSE event is its own socket write
 * by default (the next waits until the last has gone to the kernel), as a vendor's server sends tokens: node:http
 * would otherwise cork the socket for the tick and send a whole unpaced stream in one write, which flatters a
 * gateway's per-chunk cost. A request may ask for that coalesced shape (`upstream-writes=coalesced`), for a pace
 * between content events (`pace-ms=N`), and for send times stamped in the deltas (`stamp-chunks`, the c10k mode).
 *
 * Run as its own process (`node dist/bench/mock-upstream.js`): it prints one JSON line with its URL and
 * serves until SIGTERM.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { pathToFileURL } from 'node:url';
import { commandLineOption, listenForBench, serveUntilSignalled, type BenchServer } from './bench-server.js';
import {
  CHUNKS_PATTERN,
  completionTokens,
  NONCE_PATTERN,
  PACE_PATTERN,
  PROMPT_TOKENS,
  REPLY_CHUNKS,
  replyChunks,
  replyText,
  STAMP_PATTERN,
  stampNow,
  WRITES_PATTERN,
  type UpstreamWrites,
} from './mock-reply.js';

interface ParsedRequest {
  model: string;
  stream: boolean;
  includeUsage: boolean;
  nonce: string;
  paceMs: number;
  /** Content deltas of the reply (REPLY_CHUNKS unless the prompt asks for more). */
  chunks: number;
  writes: UpstreamWrites;
  /** Every content delta after the first carries its send time instead of a word. */
  stamp: boolean;
}

function openaiUsage(completion: number): string {
  return JSON.stringify({
    prompt_tokens: PROMPT_TOKENS,
    completion_tokens: completion,
    total_tokens: PROMPT_TOKENS + completion,
    prompt_tokens_details: { cached_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0 },
  });
}

function parse(raw: string): ParsedRequest | string {
  let body: {
    model?: unknown;
    stream?: unknown;
    stream_options?: { include_usage?: unknown } | null;
    messages?: unknown;
  };
  try {
    body = JSON.parse(raw) as typeof body;
  } catch {
    return 'body is not JSON';
  }
  if (typeof body.model !== 'string' || !Array.isArray(body.messages)) return 'model and messages are required';
  const nonce = NONCE_PATTERN.exec(raw)?.[1];
  if (nonce === undefined) return 'no bench nonce in the prompt';
  return {
    model: body.model,
    stream: body.stream === true,
    includeUsage: body.stream_options?.include_usage === true,
    nonce,
    paceMs: Number(PACE_PATTERN.exec(raw)?.[1] ?? 0),
    chunks: Number(CHUNKS_PATTERN.exec(raw)?.[1] ?? REPLY_CHUNKS),
    writes: WRITES_PATTERN.exec(raw)?.[1] === 'coalesced' ? 'coalesced' : 'per-event',
    stamp: STAMP_PATTERN.test(raw),
  };
}

/** The content deltas of a stream: the fixed words, or (stamped) the nonce then send times taken as each is written. */
function contentChunks(request: ParsedRequest): (index: number) => string {
  const words = replyChunks(request.nonce, request.stamp ? 1 : request.chunks);
  return (index) => words[index] ?? stampNow();
}

/**
 * One event to the socket. Per event, resolves once it has gone to the kernel and the event loop has turned (a
 * write completed at once calls back before the loop polls again), so the next is a write, and a turn, of its own.
 */
function writeEvent(response: ServerResponse, event: string, writes: UpstreamWrites): Promise<void> | undefined {
  if (writes === 'coalesced') {
    response.write(event);
    return undefined;
  }
  return new Promise((resolve) => response.write(event, () => setImmediate(resolve)));
}

/**
 * Writes the events in order. With `paceMs`, waits that long before each content event, so a client can see
 * whether chunks reach it one by one (forwarded) or in bunches (batched). Stops when the client has gone.
 */
async function writeEvents(
  response: ServerResponse,
  head: string[],
  content: { count: number; event: (index: number) => string },
  tail: string[],
  request: ParsedRequest,
): Promise<void> {
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const event of head) await writeEvent(response, event, request.writes);
  for (let index = 0; index < content.count; index++) {
    if (request.paceMs > 0) await new Promise((resolve) => setTimeout(resolve, request.paceMs));
    if (response.destroyed) return;
    await writeEvent(response, content.event(index), request.writes);
  }
  for (const event of tail) await writeEvent(response, event, request.writes);
  response.end();
}

function json(response: ServerResponse, status: number, body: string): void {
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  response.end(body);
}

function openai(request: ParsedRequest, response: ServerResponse): Promise<void> | void {
  const model = JSON.stringify(request.model);
  const created = Math.floor(Date.now() / 1000);
  const id = `chatcmpl-bench${request.nonce}`;
  const usage = openaiUsage(completionTokens(request.chunks));
  if (!request.stream) {
    const content = JSON.stringify(replyText(request.nonce, request.chunks));
    return json(
      response,
      200,
      `{"id":"${id}","object":"chat.completion","created":${created},"model":${model},"choices":[{"index":0,"message":{"role":"assistant","content":${content},"refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":${usage}}`,
    );
  }
  const head = `data: {"id":"${id}","object":"chat.completion.chunk","created":${created},"model":${model},"choices":[`;
  const chunk = contentChunks(request);
  const content = {
    count: request.chunks,
    event: (index: number) =>
      `${head}{"index":0,"delta":{"content":${JSON.stringify(chunk(index))}},"logprobs":null,"finish_reason":null}]}\n\n`,
  };
  const tail = [`${head}{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}\n\n`];
  if (request.includeUsage) tail.push(`${head}],"usage":${usage}}\n\n`);
  tail.push('data: [DONE]\n\n');
  const start = `${head}{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}\n\n`;
  return writeEvents(response, [start], content, tail, request);
}

function anthropic(request: ParsedRequest, response: ServerResponse): Promise<void> | void {
  const model = JSON.stringify(request.model);
  const id = `msg_bench${request.nonce}`;
  const output = completionTokens(request.chunks);
  if (!request.stream) {
    const text = JSON.stringify(replyText(request.nonce, request.chunks));
    return json(
      response,
      200,
      `{"id":"${id}","type":"message","role":"assistant","model":${model},"content":[{"type":"text","text":${text}}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":${PROMPT_TOKENS},"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":${output}}}`,
    );
  }
  const event = (type: string, data: string): string => `event: ${type}\ndata: ${data}\n\n`;
  const head = [
    event(
      'message_start',
      `{"type":"message_start","message":{"id":"${id}","type":"message","role":"assistant","model":${model},"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":${PROMPT_TOKENS},"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`,
    ),
    event('content_block_start', '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}'),
  ];
  const chunk = contentChunks(request);
  const content = {
    count: request.chunks,
    event: (index: number) =>
      event(
        'content_block_delta',
        `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":${JSON.stringify(chunk(index))}}}`,
      ),
  };
  const tail = [
    event('content_block_stop', '{"type":"content_block_stop","index":0}'),
    event(
      'message_delta',
      `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":${output}}}`,
    ),
    event('message_stop', '{"type":"message_stop"}'),
  ];
  return writeEvents(response, head, content, tail, request);
}

function handle(request: IncomingMessage, response: ServerResponse): void {
  const isOpenAI = request.method === 'POST' && request.url?.endsWith('/chat/completions') === true;
  const isAnthropic = request.method === 'POST' && request.url?.endsWith('/v1/messages') === true;
  if (!isOpenAI && !isAnthropic) {
    json(
      response,
      404,
      '{"error":{"type":"not_found","message":"the bench mock serves only chat completions and messages"}}',
    );
    request.resume();
    return;
  }
  const parts: Buffer[] = [];
  request.on('data', (part: Buffer) => parts.push(part));
  request.on('end', () => {
    const parsed = parse(Buffer.concat(parts).toString('utf8'));
    if (typeof parsed === 'string') {
      json(
        response,
        400,
        JSON.stringify(
          isOpenAI
            ? { error: { type: 'invalid_request_error', message: parsed } }
            : { type: 'error', error: { type: 'invalid_request_error', message: parsed } },
        ),
      );
      return;
    }
    void (isOpenAI ? openai(parsed, response) : anthropic(parsed, response));
  });
}

/** Starts the mock on `port` (0: any free port) and resolves with its origin. */
export async function startMockUpstream(port: number, host = '127.0.0.1'): Promise<BenchServer> {
  const server = createServer({ keepAliveTimeout: 120_000 }, handle);
  return listenForBench(server, port, host, 'mock upstream');
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const mock = await startMockUpstream(Number(commandLineOption('--port') ?? 0));
  serveUntilSignalled(mock);
}
