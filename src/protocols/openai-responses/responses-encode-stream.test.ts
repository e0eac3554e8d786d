import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../canonical/errors.js';
import type { CanonicalEvent } from '../../canonical/events.js';
import { ResponseAccumulator } from '../../canonical/accumulate.js';
import { decodeResponsesRequest, parseResponsesRequest } from './responses-decode-request.js';
import { encodeResponsesResponse, type ResponsesContext } from './responses-encode-response.js';
import { ResponsesStreamEncoder } from './responses-encode-stream.js';

const USAGE = {
  inputTokens: 10,
  cacheReadTokens: 4,
  cacheWriteTokens: 0,
  cacheWrite1hTokens: 0,
  outputTokens: 7,
  reasoningTokens: 3,
};

function context(body: Record<string, unknown> = {}): ResponsesContext {
  const { options } = decodeResponsesRequest(parseResponsesRequest({ model: 'alpha-sonnet-5', input: 'hi', ...body }));
  return { id: 'resp_00ab', model: 'alpha-sonnet-5', createdAt: 99, vendor: 'anthropic', options };
}

const EVENTS: CanonicalEvent[] = [
  { type: 'response-start', id: 'up', model: 'claude', created: 5 },
  { type: 'reasoning-start', blockId: 'r' },
  { type: 'reasoning-delta', blockId: 'r', text: 'hmm' },
  { type: 'reasoning-signature', blockId: 'r', signature: 'sig' },
  { type: 'reasoning-end', blockId: 'r' },
  { type: 'text-start', blockId: 't' },
  { type: 'text-delta', blockId: 't', text: 'Hi ' },
  { type: 'text-delta', blockId: 't', text: 'there' },
  { type: 'text-end', blockId: 't' },
  { type: 'tool-call-start', blockId: 'c1', id: 'toolu_1', name: 'lookup' },
  { type: 'tool-call-start', blockId: 'c2', id: 'toolu_2', name: 'lookup' },
  { type: 'tool-call-delta', blockId: 'c1', argumentsDelta: '{"q":1}' },
  { type: 'tool-call-delta', blockId: 'c2', argumentsDelta: '{"q":2}' },
  { type: 'tool-call-end', blockId: 'c1' },
  { type: 'tool-call-end', blockId: 'c2' },
  { type: 'text-start', blockId: 'empty' },
  { type: 'text-end', blockId: 'empty' },
  { type: 'finish', reason: 'tool-calls', rawReason: 'tool_use' },
  { type: 'usage', usage: USAGE },
];

type Event = { type: string; sequence_number: number; [key: string]: any };

function parse(text: string): Array<Event | '[DONE]'> {
  return text
    .split('\n\n')
    .filter(Boolean)
    .map((frame) => {
      const data = frame.slice(frame.indexOf('data: ') + 6);
      if (data === '[DONE]') return '[DONE]';
      const event = JSON.parse(data) as Event;
      expect(frame.startsWith(`event: ${event.type}\n`)).toBe(true);
      return event;
    });
}

async function run(
  encoder: ResponsesStreamEncoder,
  events: CanonicalEvent[],
  finishReason?: CanonicalEvent,
): Promise<Array<Event | '[DONE]'>> {
  let text = events.map((event) => encoder.encode(event)).join('');
  if (finishReason !== undefined) text += encoder.encode(finishReason);
  await encoder.beforeFinish(USAGE, 1234n);
  return parse(text + encoder.finish(USAGE, 1234n));
}

describe('ResponsesStreamEncoder', () => {
  it('writes the documented sequence: created, in_progress, items in output order, completed, [DONE]', async () => {
    const frames = await run(
      new ResponsesStreamEncoder(context({ reasoning: { summary: 'auto' }, include: ['reasoning.encrypted_content'] })),
      EVENTS,
    );
    expect(frames.at(-1)).toBe('[DONE]');
    const events = frames.slice(0, -1) as Event[];
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
    expect(events.map((event) => event.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.reasoning_summary_part.added',
      'response.reasoning_summary_text.delta',
      'response.reasoning_summary_text.done',
      'response.reasoning_summary_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const completed = events.at(-1)!.response;
    expect(completed.status).toBe('completed');
    expect(completed.output.map((item: { type: string }) => item.type)).toEqual([
      'reasoning',
      'message',
      'function_call',
      'function_call',
    ]);
    expect(completed.output[0].summary).toEqual([{ type: 'summary_text', text: 'hmm' }]);
    expect(completed.output[0].encrypted_content).toMatch(/^tgr1\./);
    expect(completed.output[1].content[0].text).toBe('Hi there');
    expect(completed.output[2]).toMatchObject({ call_id: 'toolu_1', arguments: '{"q":1}', status: 'completed' });
    expect(completed.output[3]).toMatchObject({ call_id: 'toolu_2', arguments: '{"q":2}' });
    expect(completed.output.map((item: { id: string }) => item.id)).toEqual([
      'rs_00ab_0',
      'msg_00ab_1',
      'fc_00ab_2',
      'fc_00ab_3',
    ]);
    expect(completed.usage).toEqual({
      input_tokens: 14,
      input_tokens_details: { cached_tokens: 4, cache_write_tokens: 0 },
      output_tokens: 7,
      output_tokens_details: { reasoning_tokens: 3 },
      total_tokens: 21,
      cost: '0.000001234',
      cost_nano_usd: '1234',
    });
    // Dense output indexes in opening order.
    const added = events
      .filter((event) => event.type === 'response.output_item.added')
      .map((event) => event.output_index);
    expect(added).toEqual([0, 1, 2, 3]);
  });

  it('text events and content parts carry the fields the SDK types require (logprobs an empty array)', async () => {
    const events = (await run(new ResponsesStreamEncoder(context()), EVENTS)).slice(0, -1) as Event[];
    const ofType = (type: string) => events.filter((event) => event.type === type);
    const part = { type: 'output_text', annotations: [], logprobs: [] };
    expect(ofType('response.content_part.added').map((event) => event.part)).toEqual([{ ...part, text: '' }]);
    expect(ofType('response.content_part.done').map((event) => event.part)).toEqual([{ ...part, text: 'Hi there' }]);
    for (const type of ['response.output_text.delta', 'response.output_text.done'])
      expect(ofType(type).map((event) => event.logprobs)).toEqual(ofType(type).map(() => []));
    const message = events.at(-1)!.response.output[1];
    expect(message.content).toEqual([{ ...part, text: 'Hi there' }]);
  });

  it('keeps reasoning text and blobs out unless asked; hands the store the full items before the last event', async () => {
    let stored: Record<string, any> | undefined;
    const encoder = new ResponsesStreamEncoder(context(), async (response) => {
      stored = response;
    });
    const frames = (await run(encoder, EVENTS)) as Event[];
    expect(frames.some((event) => event.type?.startsWith('response.reasoning_summary'))).toBe(false);
    const completed = frames.at(-2)!.response;
    expect(completed.output[0]).toEqual({ type: 'reasoning', id: 'rs_00ab_0', summary: [] });
    expect(stored!.output[0].encrypted_content).toMatch(/^tgr1\./);
    expect(stored!.id).toBe('resp_00ab');
  });

  it('a custom tool call comes back as a custom_tool_call item with its raw input', async () => {
    const tools = [{ type: 'custom', name: 'apply_patch' }];
    const events: CanonicalEvent[] = [
      { type: 'tool-call-start', blockId: 'c', id: 'call_p', name: 'apply_patch' },
      { type: 'tool-call-delta', blockId: 'c', argumentsDelta: '{"input":"*** Begin' },
      { type: 'tool-call-delta', blockId: 'c', argumentsDelta: ' Patch"}' },
      { type: 'tool-call-end', blockId: 'c' },
    ];
    const frames = (await run(new ResponsesStreamEncoder(context({ tools })), events, {
      type: 'finish',
      reason: 'tool-calls',
      rawReason: 'tool_use',
    })) as Event[];
    expect(frames.map((event) => event.type).slice(2, -1)).toEqual([
      'response.output_item.added',
      'response.custom_tool_call_input.delta',
      'response.custom_tool_call_input.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(frames.find((event) => event.type === 'response.custom_tool_call_input.done')).toMatchObject({
      input: '*** Begin Patch',
    });
    expect(frames.at(-2)!.response.output).toEqual([
      { type: 'custom_tool_call', id: 'ctc_00ab_0', call_id: 'call_p', name: 'apply_patch', input: '*** Begin Patch' },
    ]);
    const accumulator = new ResponseAccumulator();
    for (const event of events) accumulator.apply(event);
    expect(encodeResponsesResponse(accumulator.response, context({ tools })).body.output).toEqual([
      { type: 'custom_tool_call', id: 'ctc_00ab_0', call_id: 'call_p', name: 'apply_patch', input: '*** Begin Patch' },
    ]);
  });

  it('a namespaced tool call comes back by namespace and name, streamed and folded alike', async () => {
    const tools = [
      {
        type: 'namespace',
        name: 'agents',
        description: 'Sub-agents.',
        tools: [{ type: 'function', name: 'spawn', parameters: { type: 'object' } }],
      },
    ];
    const events: CanonicalEvent[] = [
      { type: 'tool-call-start', blockId: 'c', id: 'call_s', name: 'agents__spawn' },
      { type: 'tool-call-delta', blockId: 'c', argumentsDelta: '{"task":"x"}' },
      { type: 'tool-call-end', blockId: 'c' },
    ];
    const frames = (await run(new ResponsesStreamEncoder(context({ tools })), events, {
      type: 'finish',
      reason: 'tool-calls',
      rawReason: 'tool_use',
    })) as Event[];
    const call = {
      type: 'function_call',
      id: 'fc_00ab_0',
      call_id: 'call_s',
      namespace: 'agents',
      name: 'spawn',
      arguments: '{"task":"x"}',
      status: 'completed',
    };
    expect(frames.find((event) => event.type === 'response.output_item.added')!.item).toMatchObject({
      namespace: 'agents',
      name: 'spawn',
    });
    expect(frames.find((event) => event.type === 'response.function_call_arguments.done')).toMatchObject({
      name: 'spawn',
    });
    expect(frames.at(-2)!.response.output).toEqual([call]);
    const accumulator = new ResponseAccumulator();
    for (const event of events) accumulator.apply(event);
    expect(encodeResponsesResponse(accumulator.response, context({ tools })).body.output).toEqual([call]);
  });

  it('a length stop ends with response.incomplete, reason max_output_tokens', async () => {
    const frames = (await run(
      new ResponsesStreamEncoder(context()),
      [
        { type: 'text-start', blockId: 't' },
        { type: 'text-delta', blockId: 't', text: 'cut' },
      ],
      { type: 'finish', reason: 'length', rawReason: 'max_tokens' },
    )) as Event[];
    const terminal = frames.at(-2)!;
    expect(terminal.type).toBe('response.incomplete');
    expect(terminal.response).toMatchObject({
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
    });
    // The open message was closed before the terminal event.
    expect(frames.filter((event) => event.type === 'response.output_item.done')).toHaveLength(1);
  });

  it('a failure after the start: error event, then response.failed, then [DONE]', () => {
    const encoder = new ResponsesStreamEncoder(context());
    const text =
      encoder.encode({ type: 'text-start', blockId: 't' }) +
      encoder.encode({ type: 'text-delta', blockId: 't', text: 'par' });
    const frames = parse(
      text + encoder.error(new GatewayError('upstream_timeout', 'The model provider did not answer in time.')),
    );
    expect(frames.at(-1)).toBe('[DONE]');
    const [error, failed] = frames.slice(-3, -1) as Event[];
    expect(error).toMatchObject({
      type: 'error',
      code: 'upstream_timeout',
      message: 'The model provider did not answer in time.',
      param: null,
    });
    expect(failed!.type).toBe('response.failed');
    // `response.error.code` is from the SDK's `ResponseError` enum; the catalog code stays on the `error` event.
    expect(failed!.response).toMatchObject({
      status: 'failed',
      error: { code: 'server_error', message: 'The model provider did not answer in time.' },
      usage: null,
    });
    // A rate limit is the enum's `rate_limit_exceeded`.
    const limited = new ResponsesStreamEncoder(context());
    const limitedFrames = parse(limited.error(new GatewayError('upstream_rate_limited', 'Slow down.'))) as Event[];
    expect(limitedFrames.at(-2)!.response.error).toEqual({ code: 'rate_limit_exceeded', message: 'Slow down.' });
    // One terminal event: nothing after the failure.
    expect(encoder.encode({ type: 'text-delta', blockId: 't', text: 'x' }) + encoder.finish(USAGE)).toBe('');
  });

  it('the non-stream body is the fold of the same events', async () => {
    const accumulator = new ResponseAccumulator();
    for (const event of EVENTS) accumulator.apply(event);
    const { body, stored } = encodeResponsesResponse(accumulator.response, context(), 1234n);
    expect(body).toMatchObject({
      object: 'response',
      status: 'completed',
      output_text: 'Hi there',
      model: 'alpha-sonnet-5',
      incomplete_details: null,
    });
    expect((body.output as Array<{ type: string }>).map((item) => item.type)).toEqual([
      'reasoning',
      'message',
      'function_call',
      'function_call',
    ]);
    expect((body.output as Array<Record<string, unknown>>)[0]).not.toHaveProperty('encrypted_content');
    expect((stored.output as Array<Record<string, unknown>>)[0]).toHaveProperty('encrypted_content');
  });
});

describe('ResponsesStreamEncoder.compact', () => {
  it('writes the same stream, and stores the same response, when compacted after every event', async () => {
    const stored: Array<Record<string, unknown>> = [];
    const plain = new ResponsesStreamEncoder(context(), async (response) => {
      stored.push(response);
    });
    const compacted = new ResponsesStreamEncoder(context(), async (response) => {
      stored.push(response);
    });
    let text = '';
    for (const event of EVENTS) {
      text += compacted.encode(event);
      compacted.compact();
    }
    await compacted.beforeFinish(USAGE, 1234n);
    const expected = await run(plain, EVENTS);
    expect(parse(text + compacted.finish(USAGE, 1234n))).toEqual(expected);
    expect(stored[1]).toEqual(stored[0]);
  });
});
