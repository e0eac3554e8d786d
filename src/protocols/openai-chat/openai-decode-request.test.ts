import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../canonical/errors.js';
import { decodeOpenAIChatRequest } from './openai-decode-request.js';

const user = { role: 'user', content: 'hi' } as const;

function decodeError(body: unknown): GatewayError {
  try {
    decodeOpenAIChatRequest(body);
  } catch (error) {
    if (error instanceof GatewayError) return error;
    throw error;
  }
  throw new Error('expected the body to be rejected');
}

describe('decodeOpenAIChatRequest', () => {
  it('decodes system prompts, sampling, limits and extensions', () => {
    const { request, includeUsage } = decodeOpenAIChatRequest({
      model: 'beta-5.4',
      messages: [{ role: 'developer', content: 'be brief' }, user],
      temperature: 0.2,
      max_tokens: 5,
      max_completion_tokens: 7,
      stop: 'END',
      store: true,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(request.system).toEqual([{ type: 'text', text: 'be brief' }]);
    expect(request.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }]);
    expect(request.sampling).toEqual({ temperature: 0.2, stop: ['END'] });
    expect(request.maxOutputTokens).toBe(7);
    expect(request.extensions).toEqual({ store: true });
    expect(request.stream).toBe(true);
    expect(includeUsage).toBe(true);
  });

  it('keeps a system message that comes after the conversation started in its place', () => {
    const { request } = decodeOpenAIChatRequest({
      model: 'm',
      messages: [user, { role: 'system', content: 'now French' }, user],
    });
    expect(request.system).toEqual([]);
    expect(request.messages.map((message) => message.role)).toEqual(['user', 'system', 'user']);
  });

  it('groups parallel tool results into one user message and keeps call arguments as text', () => {
    const { request } = decodeOpenAIChatRequest({
      model: 'm',
      messages: [
        user,
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'get_time', arguments: '{"tz":"UTC"}' } },
            { id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '{"tz":"JST"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '09:00' },
        { role: 'tool', tool_call_id: 'call_2', content: '18:00' },
        { role: 'user', content: 'Which is later?' },
      ],
    });
    expect(request.messages).toHaveLength(4);
    expect(request.messages[1]!.content[0]).toEqual({
      type: 'tool-call',
      id: 'call_1',
      name: 'get_time',
      argumentsJson: '{"tz":"UTC"}',
    });
    expect(request.messages[2]!.content.map((block) => block.type === 'tool-result' && block.toolCallId)).toEqual([
      'call_1',
      'call_2',
    ]);
  });

  it('decodes base64 data URLs and remote image URLs', () => {
    const { request } = decodeOpenAIChatRequest({
      model: 'm',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'low' } },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
          ],
        },
      ],
    });
    expect(request.messages[0]!.content).toEqual([
      { type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: 'iVBORw0KGgo=' }, detail: 'low' },
      { type: 'image', source: { kind: 'url', url: 'https://example.com/cat.jpg' } },
    ]);
  });

  it.each([
    ['a non-object body', [1, 2], undefined, /JSON object/],
    ['missing messages', { model: 'm' }, 'messages', /required/],
    ['empty messages', { model: 'm', messages: [] }, 'messages', /at least one message/],
    [
      'an unknown role',
      { model: 'm', messages: [{ role: 'wizard', content: 'hi' }] },
      'messages[0].role',
      /must be one of .*"user".*got "wizard"/,
    ],
    [
      'content of the wrong type',
      { model: 'm', messages: [{ role: 'user', content: 5 }] },
      'messages[0].content',
      /expected string or array, got a number/,
    ],
    [
      'a bad text part',
      { model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 3 }] }] },
      'messages[0].content[0].text',
      /expected string/,
    ],
    [
      'a bad data URL',
      { model: 'm', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:xx' } }] }] },
      'messages[0].content[0].image_url.url',
      /data URL/,
    ],
    ['temperature above 2', { model: 'm', messages: [user], temperature: 3 }, 'temperature', /at most 2/],
    [
      'temperature as text',
      { model: 'm', messages: [user], temperature: 'hot' },
      'temperature',
      /expected number, got a string/,
    ],
    ['five stop sequences', { model: 'm', messages: [user], stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop', /at most 4/],
    ['a zero max_tokens', { model: 'm', messages: [user], max_tokens: 0 }, 'max_tokens', /at least 1/],
    [
      'an unknown tool_choice',
      { model: 'm', messages: [user], tool_choice: 'sometimes' },
      'tool_choice',
      /Invalid value/,
    ],
    [
      'a tool result without a call',
      { model: 'm', messages: [{ role: 'tool', content: 'x', tool_call_id: 'c1' }] },
      'messages[0].tool_call_id',
      /no preceding assistant message/,
    ],
    [
      'an assistant message without content',
      { model: 'm', messages: [user, { role: 'assistant', content: null }] },
      'messages[1].content',
      /required unless/,
    ],
    [
      'stream_options without stream',
      { model: 'm', messages: [user], stream_options: { include_usage: true } },
      'stream_options',
      /only allowed/,
    ],
  ])('rejects %s with a 400 naming the field', (_name, body, param, message) => {
    const error = decodeError(body);
    expect(error.status).toBe(400);
    expect(error.entry.openaiType).toBe('invalid_request_error');
    expect(error.param).toBe(param);
    expect(error.message).toMatch(message);
  });

  it('reads a file part as a document: a data URL as it is, bare base64 by its filename; an uploaded file_id is refused', () => {
    const part = (file: Record<string, string>) => ({
      model: 'm',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'read' },
            { type: 'file', file },
          ],
        },
      ],
    });
    const dataUrl = decodeOpenAIChatRequest(
      part({ filename: 'a.pdf', file_data: 'data:application/pdf;base64,JVBERi0=' }),
    ).request;
    expect(dataUrl.messages[0]!.content[1]).toEqual({
      type: 'document',
      title: 'a.pdf',
      source: { kind: 'base64', mediaType: 'application/pdf', data: 'JVBERi0=' },
    });
    const bare = decodeOpenAIChatRequest(part({ filename: 'notes.txt', file_data: 'aGk=' })).request;
    expect(bare.messages[0]!.content[1]).toMatchObject({
      type: 'document',
      source: { mediaType: 'text/plain', data: 'aGk=' },
    });
    const uploaded = decodeError(part({ file_id: 'file-abc' }));
    expect(uploaded.code).toBe('unsupported_parameter');
    expect(uploaded.param).toBe('messages[0].content[1].file.file_id');
  });

  it('decodes n and logprobs into the request, with the field a refusal names', () => {
    const { request } = decodeOpenAIChatRequest({
      model: 'm',
      messages: [user],
      n: 3,
      logprobs: true,
      top_logprobs: 2,
    });
    expect(request.choices).toEqual({ count: 3, param: 'n' });
    expect(request.logprobs).toEqual({ topCandidates: 2, param: 'logprobs' });
    expect(request.extensions).toEqual({});
    const single = decodeOpenAIChatRequest({ model: 'm', messages: [user], n: 1, logprobs: false }).request;
    expect(single.choices).toBeUndefined();
    expect(single.logprobs).toBeUndefined();
  });

  it('refuses n above 128 and top_logprobs without logprobs, naming the field', () => {
    expect(decodeError({ model: 'm', messages: [user], n: 129 }).param).toBe('n');
    expect(decodeError({ model: 'm', messages: [user], top_logprobs: 2 }).param).toBe('top_logprobs');
    expect(decodeError({ model: 'm', messages: [user], logprobs: true, top_logprobs: 21 }).param).toBe('top_logprobs');
  });

  it('decodes prompt_cache_key and prompt_cache_retention into the request, not as extensions', () => {
    const { request } = decodeOpenAIChatRequest({
      model: 'beta-5.4',
      messages: [user],
      prompt_cache_key: 'session-42',
      prompt_cache_retention: 'in_memory',
    });
    expect(request).toMatchObject({ promptCacheKey: 'session-42', promptCacheRetention: 'in_memory' });
    expect(request.extensions).toEqual({});
    const unset = decodeOpenAIChatRequest({ model: 'm', messages: [user], prompt_cache_key: null }).request;
    expect(unset).not.toHaveProperty('promptCacheKey');
    expect(unset).not.toHaveProperty('promptCacheRetention');
  });

  it.each([
    [{ prompt_cache_key: 'k'.repeat(65) }, 'prompt_cache_key', /at most 64 characters/],
    [{ prompt_cache_key: 42 }, 'prompt_cache_key', /expected string/],
    [{ prompt_cache_retention: '1h' }, 'prompt_cache_retention', /in_memory.*24h/],
  ])('refuses a bad prompt-cache field with a 400 naming it: %j', (fields, param, message) => {
    const error = decodeError({ model: 'm', messages: [user], ...fields });
    expect(error.status).toBe(400);
    expect(error.param).toBe(param);
    expect(error.message).toMatch(message);
  });
});
